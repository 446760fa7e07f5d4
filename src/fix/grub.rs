//! What GRUB will put on the kernel command line: /etc/default/grub, then /etc/default/grub.d/*.cfg in name
//! order, as grub-mkconfig sources them. A small evaluator of the shell assignments these files hold (quotes,
//! $VAR and ${VAR}); anything it cannot follow is reported, not guessed. Pure functions.

use std::collections::HashMap;

use super::cmdline::{merge_into, name, tokens};

/// The drop-in installed as /etc/default/grub.d/99-rmp-eval.cfg (see kernel-cmdline/).
pub const DROPIN: &str = include_str!("../../kernel-cmdline/99-rmp-eval.cfg");
pub const DROPIN_NAME: &str = "99-rmp-eval.cfg";
/// Every name our drop-in may have (see boot.rs: a later-sorting name when another drop-in sorts after ours).
pub const DROPIN_PATHS: [&str; 2] = [
    "/etc/default/grub.d/99-rmp-eval.cfg",
    "/etc/default/grub.d/zz-rmp-eval.cfg",
];
pub const VARS: [&str; 2] = ["GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Eval {
    vars: HashMap<String, String>,
    /// Lines touching the command line that the evaluator could not follow ("file:line: text").
    pub unsure: Vec<String>,
}

impl Eval {
    pub fn linux(&self) -> &str {
        self.vars.get(VARS[0]).map_or("", String::as_str)
    }
    pub fn linux_default(&self) -> &str {
        self.vars.get(VARS[1]).map_or("", String::as_str)
    }
    /// The parameters a normal (non-recovery) menu entry gets: GRUB_CMDLINE_LINUX then _DEFAULT.
    pub fn effective(&self) -> Vec<String> {
        let mut t = tokens(self.linux());
        t.extend(tokens(self.linux_default()));
        t
    }

    /// Follows the assignments of one sourced file.
    pub fn source(&mut self, file: &str, text: &str) {
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let body = line.strip_prefix("export ").unwrap_or(line).trim_start();
            let Some((var, rhs)) = body.split_once('=') else {
                if VARS.iter().any(|v| line.contains(v)) {
                    self.unsure.push(format!("{file}:{}: {line}", n + 1));
                }
                continue;
            };
            if var.is_empty() || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                if VARS.iter().any(|v| line.contains(v)) {
                    self.unsure.push(format!("{file}:{}: {line}", n + 1));
                }
                continue;
            }
            match self.word(rhs) {
                Some(v) => {
                    self.vars.insert(var.to_string(), v);
                }
                None if VARS.contains(&var) => {
                    self.unsure.push(format!("{file}:{}: {line}", n + 1))
                }
                None => {}
            }
        }
    }

    /// What our drop-in does with the parameters saved in the state file.
    pub fn apply_dropin(&mut self, managed: &[String]) {
        if managed.is_empty() {
            return;
        }
        let names: Vec<&str> = managed.iter().map(|t| name(t)).collect();
        let keep = |s: &str| -> Vec<String> {
            s.split_whitespace()
                .filter(|w| !names.contains(&name(w)))
                .map(str::to_string)
                .collect()
        };
        let linux = keep(self.linux()).join(" ");
        let default = merge_into(&keep(self.linux_default()), managed).join(" ");
        self.vars.insert(VARS[0].into(), linux);
        self.vars.insert(VARS[1].into(), default);
    }

    /// One shell word: quotes, $VAR, ${VAR}, backslash escapes. None for command substitution and the like.
    fn word(&self, s: &str) -> Option<String> {
        let mut out = String::new();
        let mut it = s.chars().peekable();
        let mut quote: Option<char> = None;
        while let Some(c) = it.next() {
            match (quote, c) {
                (None, c) if c.is_whitespace() || c == ';' => break,
                (None, '#') if out.is_empty() => break,
                (None, '"') | (None, '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (Some('\''), c) => out.push(c),
                (_, '`') => return None,
                (q, '\\') => match it.next() {
                    Some(n) if q.is_none() || "\"\\$`".contains(n) => out.push(n),
                    Some(n) => {
                        out.push('\\');
                        out.push(n);
                    }
                    None => {}
                },
                (_, '$') => {
                    let braced = it.peek() == Some(&'{');
                    if braced {
                        it.next();
                    }
                    let mut v = String::new();
                    while let Some(&n) = it.peek() {
                        if n.is_ascii_alphanumeric() || n == '_' {
                            v.push(n);
                            it.next();
                        } else {
                            break;
                        }
                    }
                    if braced && it.next() != Some('}') {
                        return None;
                    }
                    if v.is_empty() {
                        return None;
                    }
                    out.push_str(self.vars.get(&v).map_or("", String::as_str));
                }
                (_, c) => out.push(c),
            }
        }
        if quote.is_some() { None } else { Some(out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_default_then_cloud_dropin() {
        // /etc/default/grub of the captured Debian 12 guest; the drop-in as Debian's cloud images ship it.
        let mut e = Eval::default();
        e.source(
            "grub",
            "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0,115200\"\n",
        );
        e.source(
            "50-cloudimg-settings.cfg",
            "# comment\nGRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\n",
        );
        assert_eq!(
            e.effective(),
            ["console=ttyS0,115200", "console=tty1", "console=ttyS0"]
        );
        e.source(
            "x",
            "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX quiet\" # add\n",
        );
        e.source("y", "export GRUB_CMDLINE_LINUX_DEFAULT='${x}' \n");
        assert_eq!(e.linux(), "console=ttyS0,115200 quiet");
        assert_eq!(e.linux_default(), "${x}");
        assert!(e.unsure.is_empty());
        e.source(
            "z",
            "GRUB_CMDLINE_LINUX=\"$(cat /x)\"\nGRUB_CMDLINE_LINUX=`x`\n",
        );
        assert_eq!(e.unsure.len(), 2);
        assert_eq!(e.linux(), "console=ttyS0,115200 quiet");
    }

    #[test]
    fn dropin_replaces_managed_parameters_once() {
        let mut e = Eval::default();
        e.source("grub", "GRUB_CMDLINE_LINUX=\"isolcpus=2 quiet\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"nohz_full=2 splash\"");
        e.apply_dropin(&[
            "isolcpus=managed_irq,domain,2-3".into(),
            "nohz_full=2-3".into(),
        ]);
        assert_eq!(e.linux(), "quiet");
        assert_eq!(
            e.linux_default(),
            "splash isolcpus=managed_irq,domain,2-3 nohz_full=2-3"
        );
        assert!(DROPIN.contains("/var/lib/rmp-eval/cmdline"));
    }
}
