//! A kernel command line as fix edits it, split by the one tokenizer (crate::parse::cmdline): managed
//! parameters merged in (never one twice, in either spelling: `nohz-full` is `nohz_full` to the kernel), and the
//! byte-level versions for command-line files, which may hold bytes that are not UTF-8 and must come back as
//! they were. Pure.

use crate::fix::kind::file::CmdlineEdit;
pub(crate) use crate::parse::cmdline::{
    last_value, name, name_bytes, same_name, same_name_bytes, tokens, tokens_bytes,
};

/// Whether the token `t` is a parameter `managed` names, in either spelling.
fn is_managed_bytes(managed: &[String], t: &[u8]) -> bool {
    managed
        .iter()
        .any(|m| same_name_bytes(name(m).as_bytes(), name_bytes(t)))
}

/// `merge_into` on bytes: every parameter named in `managed` replaced by its one new value, where the first of
/// its name was (else at the end).
pub(crate) fn merge_bytes(base: &[Vec<u8>], managed: &[String]) -> Vec<Vec<u8>> {
    // Each managed parameter takes the place of the first of its name in either spelling, so that the user's
    // order stays (and a rollback that takes fix's parameter out puts theirs back where it was); the others go at
    // the end, and every other occurrence of the name goes (the kernel would act on one of them only).
    let managed_of = |t: &[u8]| {
        managed
            .iter()
            .find(|m| same_name_bytes(name(m).as_bytes(), name_bytes(t)))
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut placed: Vec<&String> = Vec::new();
    for t in base {
        match managed_of(t) {
            Some(m) if !placed.contains(&m) => {
                out.push(m.as_bytes().to_vec());
                placed.push(m);
            }
            Some(_) => {}
            None => out.push(t.clone()),
        }
    }
    out.extend(
        managed
            .iter()
            .filter(|m| !placed.contains(m))
            .map(|m| m.as_bytes().to_vec()),
    );
    out
}

/// The parameters of `base` that `managed` replaces (same names), as text.
pub(crate) fn replaced(base: &[Vec<u8>], managed: &[String]) -> Vec<String> {
    base.iter()
        .filter(|t| is_managed_bytes(managed, t))
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
            .filter(|r| same_name(name(r), name(a)))
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

/// `merge_bytes` on text: each parameter named in `managed` replaced by its one new value, in its place.
pub(crate) fn merge_into(base: &[String], managed: &[String]) -> Vec<String> {
    let bytes: Vec<Vec<u8>> = base.iter().map(|t| t.as_bytes().to_vec()).collect();
    merge_bytes(&bytes, managed)
        .into_iter()
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .collect()
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
    fn a_dash_spelled_parameter_is_replaced_and_its_spelling_dropped() {
        // The user's GRUB line of a machine isolated by hand, spelled with dashes as the kernel allows.
        // Each takes the place of the user's (in either spelling), a second spelling goes.
        let base = tokens("quiet nohz-full=2 rcu-nocbs=2 isolcpus=2 nohz_full=2");
        let managed = ["nohz_full=2-3".to_string(), "rcu_nocbs=2-3".to_string()];
        assert_eq!(
            merge_into(&base, &managed),
            ["quiet", "nohz_full=2-3", "rcu_nocbs=2-3", "isolcpus=2"]
        );
        let bytes: Vec<Vec<u8>> = base.iter().map(|t| t.as_bytes().to_vec()).collect();
        assert_eq!(
            replaced(&bytes, &managed),
            ["nohz-full=2", "rcu-nocbs=2", "nohz_full=2"]
        );
        assert_eq!(merge_bytes(&bytes, &managed).len(), 4);
    }
}
