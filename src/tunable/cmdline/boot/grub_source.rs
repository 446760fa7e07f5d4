//! What GRUB will put on the kernel command line, found the way grub-mkconfig finds it: /etc/default/grub, then
//! /etc/default/grub.d/*.cfg in the shell's glob order (by bytes, as dash sorts; names starting with a dot are not
//! matched), each file's assignments in turn; then GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT. The files
//! are read, never run: `parse::shell` reads their assignments and quoting, and what it cannot know without
//! running them (a command, a command substitution in the command line …) is a refusal naming the file and line.
//! Our own drop-in (DROPIN, byte for byte) is shell code fix installs; what it does is computed here
//! ([`ours`]), the same as the shell gives (tests/fix/generated_grub.rs compares both with dash and bash).
//!
//! On this machine too: update-grub will source these files as root anyway, but the reading here gives the same
//! result for every file made of assignments, refuses the rest with a reason, and is the only code there is —
//! so a snapshot's files (`--root`) can never be run by rmp-eval, whatever path a future change takes.

use super::grub_layout::{DROPIN, GRUB_D, GRUB_DEFAULT, GrubError, Layout};
use super::tokens::tokens;
use crate::parse::shell::{self, Var, Vars};

const LINUX: &str = "GRUB_CMDLINE_LINUX";
const LINUX_DEFAULT: &str = "GRUB_CMDLINE_LINUX_DEFAULT";

/// What reading gave: the two variables and the drop-ins in the order grub-mkconfig sources them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Effective {
    pub(crate) linux: String,
    pub(crate) linux_default: String,
    pub(crate) order: Vec<String>,
}

impl Effective {
    /// The parameters a normal (non-recovery) menu entry gets: GRUB_CMDLINE_LINUX then _DEFAULT.
    pub(crate) fn params(&self) -> Vec<String> {
        let mut t = tokens(&self.linux);
        t.extend(tokens(&self.linux_default));
        t
    }
}

/// Reads `layout` as grub-mkconfig sources it, our drop-in(s) taking `state` as the managed parameters.
pub(crate) fn evaluate(layout: &Layout, state: &[u8]) -> Result<Effective, GrubError> {
    let mut vars = Vars::default();
    if let Some(d) = &layout.default {
        read(GRUB_DEFAULT, d, &mut vars)?;
    }
    let mut dropins: Vec<&(String, Vec<u8>)> = layout
        .dropins
        .iter()
        .filter(|(n, _)| !n.starts_with('.'))
        .collect();
    dropins.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut order = Vec::new();
    for (n, b) in dropins {
        order.push(n.clone());
        if b == DROPIN.as_bytes() {
            ours(&mut vars, state)?;
        } else {
            read(&format!("{GRUB_D}/{n}"), b, &mut vars)?;
        }
    }
    let get = |var: &'static str| {
        vars.value(var)
            .map(str::to_string)
            .map_err(|why| GrubError::Unknown {
                var,
                why: why.to_string(),
            })
    };
    Ok(Effective {
        linux: get(LINUX)?,
        linux_default: get(LINUX_DEFAULT)?,
        order,
    })
}

fn read(path: &str, bytes: &[u8], vars: &mut Vars) -> Result<(), GrubError> {
    let text = std::str::from_utf8(bytes).map_err(|_| GrubError::NotUtf8(path.to_string()))?;
    shell::source(path, text, vars).map_err(GrubError::Read)
}

/// What our drop-in does when sourced: with the state file non-empty, every parameter named in it (in either
/// spelling, `-` or `_`) is taken out of both variables (a word ends at a blank outside double quotes; the blanks before a kept word stay, leading
/// and trailing ones go), and the state's line (without its final newlines) is appended to _DEFAULT.
fn ours(vars: &mut Vars, state: &[u8]) -> Result<(), GrubError> {
    if state.is_empty() {
        return Ok(());
    }
    let params = std::str::from_utf8(state)
        .map_err(|_| GrubError::NotUtf8(crate::fix::CMDLINE_STATE.to_string()))?
        .trim_end_matches('\n');
    // `case "$names " in *" $name "*`: the names each after a space, one more space at the end.
    let mut names: String = params
        .split([' ', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .map(|w| format!(" {}", name_of(w)))
        .collect();
    names.push(' ');
    for var in [LINUX, LINUX_DEFAULT] {
        let v = match vars.value(var) {
            Ok(line) => {
                let kept = without(line, &names);
                if var == LINUX {
                    Var::Set(kept)
                } else {
                    let space = if kept.is_empty() { "" } else { " " };
                    Var::Set(format!("{kept}{space}{params}"))
                }
            }
            Err(why) => Var::Unknown(why.to_string()),
        };
        vars.set(var, v);
    }
    Ok(())
}

/// A word's name up to the first `=`, every `-` as `_` (the drop-in's rmp_eval_name).
fn name_of(word: &str) -> String {
    word.split('=').next().unwrap_or(word).replace('-', "_")
}

/// `line` without the words whose name (as `name_of` gives it) is in `names` (" a b "), as the drop-in's
/// rmp_eval_drop does it.
fn without(line: &str, names: &str) -> String {
    let blank = |c: char| matches!(c, ' ' | '\t' | '\n');
    let mut rest = line;
    let mut kept = String::new();
    loop {
        let word_at = rest.len() - rest.trim_start_matches(blank).len();
        let sep = &rest[..word_at];
        rest = &rest[word_at..];
        if rest.is_empty() {
            return kept;
        }
        let mut quoted = false;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                quoted ^= c == '"';
                blank(c) && !quoted
            })
            .map_or(rest.len(), |(i, _)| i);
        let word = &rest[..end];
        rest = &rest[end..];
        if !names.contains(&format!(" {} ", name_of(word))) {
            if !kept.is_empty() {
                kept.push_str(sep);
            }
            kept.push_str(word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grub_layout::DROPIN_NAME;
    use super::*;

    #[test]
    fn read_as_grub_mkconfig_sources_quotes_kept_order_reported() {
        // /etc/default/grub of the captured Debian 12 guest; the drop-in as Debian's cloud images ship it.
        let l = Layout {
            default: Some(
                b"GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0,115200 foo=\\\"a  b\\\"\"\n"
                    .to_vec(),
            ),
            dropins: vec![(
                "50-cloudimg-settings.cfg".into(),
                b"# comment\nGRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\n".to_vec(),
            )],
        };
        let e = evaluate(&l.with_ours(Some(DROPIN_NAME)), b"isolcpus=domain,1\n").unwrap();
        assert_eq!(e.linux, "console=ttyS0,115200 foo=\"a  b\"");
        assert_eq!(
            e.params(),
            [
                "console=ttyS0,115200",
                "foo=\"a  b\"",
                "console=tty1",
                "console=ttyS0",
                "isolcpus=domain,1"
            ]
        );
        assert_eq!(e.order, ["50-cloudimg-settings.cfg", DROPIN_NAME]);
        let bad = Layout {
            default: Some(b"GRUB_CMDLINE_LINUX=\"unterminated\n".to_vec()),
            dropins: vec![],
        };
        let err = evaluate(&bad, b"").unwrap_err().to_string();
        assert_eq!(err, "/etc/default/grub line 1: unterminated double quote");
    }
}
