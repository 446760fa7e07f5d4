//! The kernel command line, split as the kernel does: whitespace separates parameters, double quotes may enclose
//! spaces (`dyndbg="file x.c +p"`, `"quiet splash"`), and "--" ends the kernel's part. A parameter's name is
//! the same with `-` or `_` (kernel/params.c `parameqn`: `nohz-full=2` is `nohz_full=2`). The one tokenizer:
//! the checks read /proc/cmdline through `parse`, fix edits command-line files through `tokens`/`tokens_bytes`.

/// One parameter: `key` or `key=value` (quotes removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub(crate) key: String,
    pub(crate) value: Option<String>,
}

/// The kernel keeps at most COMMAND_LINE_SIZE - 1 bytes of its command line (the size counts the NUL):
/// arch/x86/include/asm/setup.h 2048, arch/arm64/include/uapi/asm/setup.h 4096. `arch` is `uname -m`; another
/// or an unknown one gets the largest, so that no real command line is refused.
pub(crate) fn command_line_size(arch: Option<&str>) -> usize {
    match arch {
        Some("x86_64" | "i386" | "i486" | "i586" | "i686") => 2048,
        _ => 4096,
    }
}

/// Why a /proc/cmdline is none the kernel printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CmdlineError {
    #[error("{len} bytes, longer than the kernel's command line can be ({max} on {arch})")]
    TooLong {
        len: usize,
        max: usize,
        arch: String,
    },
}

/// `text` as /proc/cmdline holds it (the line and its newline), if the kernel could have printed it.
pub(crate) fn check_size(text: &str, arch: Option<&str>) -> Result<(), CmdlineError> {
    let line = text.strip_suffix('\n').unwrap_or(text);
    let size = command_line_size(arch);
    if line.len() >= size {
        return Err(CmdlineError::TooLong {
            len: line.len(),
            max: size - 1,
            arch: arch.unwrap_or("an unknown architecture").to_string(),
        });
    }
    Ok(())
}

/// Splits a command line into parameters, in order. Unbalanced quotes run to the end, as in the kernel.
pub fn parse(s: &str) -> Vec<Param> {
    tokens(s)
        .into_iter()
        .map(|t| t.replace('"', ""))
        .take_while(|t| t != "--")
        .map(|tok| match tok.split_once('=') {
            Some((k, v)) => Param {
                key: k.to_string(),
                value: Some(v.to_string()),
            },
            None => Param {
                key: tok,
                value: None,
            },
        })
        .collect()
}

/// The value of the last `key=…` in either spelling (the kernel applies most parameters in order, so the last
/// one wins). `Some("")` for a bare `key` or `key=`.
pub fn get<'a>(params: &'a [Param], key: &str) -> Option<&'a str> {
    params
        .iter()
        .rev()
        .find(|p| same_name(&p.key, key))
        .map(|p| p.value.as_deref().unwrap_or(""))
}

/// Splits a command line as the kernel does: on whitespace, except inside double quotes (kept in the token).
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

/// A token's parameter name ("isolcpus" of "isolcpus=2"), as written.
pub(crate) fn name(tok: &str) -> &str {
    tok.split_once('=').map_or(tok, |(n, _)| n)
}

/// `name` on bytes.
pub(crate) fn name_bytes(tok: &[u8]) -> &[u8] {
    tok.iter()
        .position(|&b| b == b'=')
        .map_or(tok, |i| &tok[..i])
}

/// Whether two parameter names are one parameter to the kernel: `-` and `_` are alike.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    same_name_bytes(a.as_bytes(), b.as_bytes())
}

/// `same_name` on bytes.
pub(crate) fn same_name_bytes(a: &[u8], b: &[u8]) -> bool {
    let dash = |c: &u8| if *c == b'-' { b'_' } else { *c };
    a.len() == b.len() && a.iter().map(dash).eq(b.iter().map(dash))
}

/// The value of the last token named `param` in either spelling (the one the kernel acts on for most
/// parameters).
pub(crate) fn last_value(toks: &[String], param: &str) -> Option<String> {
    toks.iter()
        .rev()
        .find(|t| same_name(name(t), param))
        .map(|t| {
            t.split_once('=')
                .map_or(String::new(), |(_, v)| v.to_string())
        })
}

/// The CPU list of an `isolcpus=` value without its flags (`managed_irq,domain,1-3` → `1-3`).
pub fn isolcpus_list(value: &str) -> &str {
    let mut rest = value;
    loop {
        let head = rest.split(',').next().unwrap_or("");
        if matches!(head, "nohz" | "domain" | "managed_irq") {
            rest = rest.get(head.len() + 1..).unwrap_or("");
        } else {
            return rest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_debian_guest() {
        // /proc/cmdline of the captured Debian 12 RT guest (fixtures/debian12-rt-qemu-isolated), with its
        // trailing space and newline.
        let p = parse(
            "root=UUID=fd86818c-a252-498d-af5e-91c50de4441f ro console=ttyS0,115200 isolcpus=1 nohz_full=1 rcu_nocbs=1 \n",
        );
        assert_eq!(p.len(), 6);
        assert_eq!(
            get(&p, "root"),
            Some("UUID=fd86818c-a252-498d-af5e-91c50de4441f")
        );
        assert_eq!(get(&p, "ro"), Some(""));
        assert_eq!(get(&p, "rcu_nocbs"), Some("1"));
        assert_eq!(get(&p, "irqaffinity"), None);
    }

    #[test]
    fn quotes_and_init_args() {
        // Ubuntu GRUB style, a dyndbg value with spaces, and init arguments after "--".
        let p = parse(
            r#"BOOT_IMAGE=/vmlinuz-6.8.0 root=/dev/sda1 "quiet splash" dyndbg="file net/core/dev.c +p" isolcpus=managed_irq,domain,2-3 -- single nohz_full=9"#,
        );
        assert_eq!(get(&p, "dyndbg"), Some("file net/core/dev.c +p"));
        assert_eq!(p[2].key, "quiet splash");
        assert_eq!(get(&p, "nohz_full"), None, "init args must be ignored");
        assert_eq!(isolcpus_list(get(&p, "isolcpus").unwrap()), "2-3");
        assert_eq!(isolcpus_list("nohz,domain,1"), "1");
        assert_eq!(isolcpus_list("4-7"), "4-7");
    }

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

    #[test]
    fn a_parameter_reads_in_either_spelling() {
        // kernel/params.c parameqn: '-' and '_' are alike in a name, not in a value.
        let p = parse("nohz-full=2 rcu_nocbs=2 intel-idle.max_cstate=0 foo=a-b");
        assert_eq!(get(&p, "nohz_full"), Some("2"));
        assert_eq!(get(&p, "rcu-nocbs"), Some("2"));
        assert_eq!(get(&p, "intel_idle.max_cstate"), Some("0"));
        assert_eq!(get(&p, "nohz"), None);
        assert!(same_name("a-b_c", "a_b-c"));
        assert!(!same_name("nohz_full", "nohz_fullx"));
        let t = tokens("nohz-full=2 nohz_full=3");
        assert_eq!(last_value(&t, "nohz_full").as_deref(), Some("3"));
        assert_eq!(last_value(&t[..1], "nohz_full").as_deref(), Some("2"));
    }

    #[test]
    fn a_line_longer_than_the_kernel_keeps_is_refused() {
        let line = |n: usize| format!("{}\n", "x".repeat(n));
        assert!(check_size(&line(2047), Some("x86_64")).is_ok());
        assert!(check_size(&line(2048), Some("x86_64")).is_err());
        assert!(check_size(&line(4095), Some("aarch64")).is_ok());
        assert!(check_size(&line(4096), Some("aarch64")).is_err());
        assert!(check_size(&line(4095), None).is_ok());
        assert_eq!(
            check_size(&line(1 << 20), Some("x86_64"))
                .unwrap_err()
                .to_string(),
            "1048576 bytes, longer than the kernel's command line can be (2047 on x86_64)"
        );
    }

    #[test]
    fn last_value_wins_and_unbalanced_quote() {
        let p = parse("irqaffinity=0 irqaffinity=0-1 x=\"a b");
        assert_eq!(get(&p, "irqaffinity"), Some("0-1"));
        assert_eq!(get(&p, "x"), Some("a b"));
    }
}
