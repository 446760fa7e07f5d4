//! The kernel command line (/proc/cmdline) split as the kernel does: whitespace separates parameters, double
//! quotes may enclose spaces (`dyndbg="file x.c +p"`, `"quiet splash"`), and "--" ends the kernel's part.

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
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut tok = String::new();
        let mut in_quote = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() && !in_quote {
                break;
            }
            chars.next();
            if c == '"' {
                in_quote = !in_quote;
                continue;
            }
            tok.push(c);
        }
        if tok == "--" {
            break;
        }
        let p = match tok.split_once('=') {
            Some((k, v)) => Param {
                key: k.to_string(),
                value: Some(v.to_string()),
            },
            None => Param {
                key: tok,
                value: None,
            },
        };
        out.push(p);
    }
    out
}

/// The value of the last `key=…` (the kernel applies most parameters in order, so the last one wins).
/// `Some("")` for a bare `key` or `key=`.
pub fn get<'a>(params: &'a [Param], key: &str) -> Option<&'a str> {
    params
        .iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| p.value.as_deref().unwrap_or(""))
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
