//! A kernel command line as fix edits it: split into tokens as the kernel does (quotes kept in the token), a
//! parameter's name and last value, managed parameters merged in (never one twice), and the byte-level versions
//! for command-line files, which may hold bytes that are not UTF-8 and must come back as they were. Pure.

use crate::fix::kind::file::CmdlineEdit;

/// Splits a command line as the kernel does: on whitespace, except inside double quotes.
pub(crate) fn tokens(line: &str) -> Vec<String> {
    split(line.chars(), '"', char::is_whitespace)
        .into_iter()
        .map(String::from_iter)
        .collect()
}

/// `tokens` on bytes: a command-line file may hold bytes that are not UTF-8, and they must come back as they were.
pub(crate) fn tokens_bytes(line: &[u8]) -> Vec<Vec<u8>> {
    split(line.iter().copied(), b'"', |c: u8| c.is_ascii_whitespace())
}

/// The one splitter behind `tokens` and `tokens_bytes`: on `space`, except between `quote`s (kept in the token).
fn split<T: Copy + PartialEq>(
    items: impl Iterator<Item = T>,
    quote: T,
    space: impl Fn(T) -> bool,
) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut quoted = false;
    for c in items {
        if c == quote {
            quoted = !quoted;
            cur.push(c);
        } else if space(c) && !quoted {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `name` on bytes.
pub(crate) fn name_bytes(tok: &[u8]) -> &[u8] {
    tok.iter()
        .position(|&b| b == b'=')
        .map_or(tok, |i| &tok[..i])
}

/// `merge_into` on bytes: every parameter named in `managed` replaced by its one new value, where the first of
/// its name was (else at the end).
pub(crate) fn merge_bytes(base: &[Vec<u8>], managed: &[String]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut placed: Vec<&str> = Vec::new();
    for t in base {
        match managed.iter().find(|m| name(m).as_bytes() == name_bytes(t)) {
            Some(m) if !placed.contains(&name(m)) => {
                out.push(m.as_bytes().to_vec());
                placed.push(name(m));
            }
            Some(_) => {}
            None => out.push(t.clone()),
        }
    }
    out.extend(
        managed
            .iter()
            .filter(|m| !placed.contains(&name(m)))
            .map(|m| m.as_bytes().to_vec()),
    );
    out
}

/// The parameters of `base` that `managed` replaces (same names), as text.
pub(crate) fn replaced(base: &[Vec<u8>], managed: &[String]) -> Vec<String> {
    let names: Vec<&[u8]> = managed.iter().map(|t| name(t).as_bytes()).collect();
    base.iter()
        .filter(|t| names.contains(&name_bytes(t)))
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect()
}

/// The first line of a command-line file (the Raspberry Pi firmware reads only that one) and the rest.
pub(crate) fn split_first_line(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b'\n') {
        Some(i) => b.split_at(i + 1),
        None => (b, &[]),
    }
}

/// Rollback of a command-line file edited since fix wrote `written`: each parameter fix added that is still
/// there, unchanged, gives way to the ones it had replaced; everything else stays as it is now (a parameter fix
/// set and the user changed is the user's). Returns the new bytes and what of the user's was kept.
pub(crate) fn take_out(now: &[u8], written: &[u8], edit: &CmdlineEdit) -> (Vec<u8>, String) {
    let (line, rest) = split_first_line(now);
    let mut toks = tokens_bytes(line);
    for a in &edit.added {
        let Some(i) = toks.iter().position(|t| t == a.as_bytes()) else {
            continue;
        };
        let back: Vec<Vec<u8>> = edit
            .replaced
            .iter()
            .filter(|r| name(r) == name(a))
            .map(|r| r.as_bytes().to_vec())
            .collect();
        toks.splice(i..=i, back);
    }
    let mut out = toks.join(&b' ');
    if line.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(rest);
    let was = tokens_bytes(split_first_line(written).0);
    let is = tokens_bytes(line);
    let show = |t: &Vec<u8>| String::from_utf8_lossy(t).into_owned();
    let mut kept: Vec<String> = is
        .iter()
        .filter(|t| !was.contains(t))
        .map(|t| format!("+{}", show(t)))
        .collect();
    kept.extend(
        was.iter()
            .filter(|t| !is.contains(t))
            .map(|t| format!("-{}", show(t))),
    );
    if rest != split_first_line(written).1 {
        kept.push("the lines after the first".into());
    }
    (out, kept.join(" "))
}

/// A parameter's name ("isolcpus" of "isolcpus=2").
pub(crate) fn name(tok: &str) -> &str {
    tok.split_once('=').map_or(tok, |(n, _)| n)
}

/// The value of the last occurrence of `param` (the one the kernel acts on for most parameters).
pub(crate) fn last_value(toks: &[String], param: &str) -> Option<String> {
    toks.iter().rev().find(|t| name(t) == param).map(|t| {
        t.split_once('=')
            .map_or(String::new(), |(_, v)| v.to_string())
    })
}

/// Replaces every occurrence of the parameters named in `managed` by their one new value, kept at the end.
pub(crate) fn merge_into(base: &[String], managed: &[String]) -> Vec<String> {
    // Each managed parameter takes the place of the first of its name, so that the user's order stays (and a
    // rollback that takes fix's parameter out puts theirs back where it was); the others go at the end.
    let mut out: Vec<String> = Vec::new();
    let mut placed: Vec<&str> = Vec::new();
    for t in base {
        match managed.iter().find(|m| name(m) == name(t)) {
            Some(m) if !placed.contains(&name(m)) => {
                out.push(m.clone());
                placed.push(name(m));
            }
            Some(_) => {}
            None => out.push(t.clone()),
        }
    }
    out.extend(
        managed
            .iter()
            .filter(|m| !placed.contains(&name(m)))
            .cloned(),
    );
    out
}

/// A token is safe to hand to the GRUB drop-in (a POSIX sh word) and to /etc/kernel/cmdline.
pub(crate) fn is_safe_token(t: &str) -> bool {
    !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.,=:-/+".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_quoted_values() {
        // /proc/cmdline of the captured untuned guest, plus a quoted value as the kernel allows.
        let t = tokens(
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro console=ttyS0,115200 foo=\"a b\"\n",
        );
        assert_eq!(t.len(), 5);
        assert_eq!(t[4], "foo=\"a b\"");
        assert_eq!(name(&t[1]), "root");
        assert_eq!(last_value(&t, "console").as_deref(), Some("ttyS0,115200"));
    }
}
