//! Shell completion of the hyphenated program name, exercised in the real shells: bash through
//! its completion function as `complete -F` registered it, fish through `complete -C`, zsh through a
//! pseudo-terminal (zpty) typing a line and TAB. The hidden apply-saved and generate are never offered.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::check::*;

fn generated() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ck-comp")
        .tempdir()
        .unwrap();
    let o = run(&["generate", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    d
}

fn have(shell: &str) -> bool {
    Command::new(shell)
        .arg("-c")
        .arg("exit 0")
        .status()
        .is_ok_and(|s| s.success())
        || common::cannot_run(shell, "not installed (tests/install-deps.sh installs it)")
}

/// bash: the completions of the last word of `words`, from the function `complete -p rmp-eval` names.
fn bash(dir: &Path, words: &[&str]) -> Vec<String> {
    let script = r#"
source "$1/rmp-eval.bash"; shift
f=$(complete -p rmp-eval | sed -E 's/.*-F ([^ ]+) .*/\1/')
COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"$f" rmp-eval "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .arg(dir)
        .args(words)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn fish(dir: &Path, line: &str) -> Vec<String> {
    let o = Command::new("fish")
        .args(["--no-config", "-c"])
        .arg(format!(
            "source {}/rmp-eval.fish; complete -C '{line}'",
            dir.display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect()
}

/// zsh: types `line`, TAB, and reads back the line as completion left it.
fn zsh(dir: &Path, line: &str) -> String {
    let script = r#"
zmodload zsh/zpty
zpty -b z 'zsh -f -i'
zpty -w z "bindkey -e; PS1='> '; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -n -w z "$2"$'\t'
sleep 1
zpty -n -w z $'\x01echo @@\x05@@; echo done$((6*7))\n'
out=''
# Until the line ran (only its output holds "done42"), however slow the machine.
while [[ $out != *done42* ]] && (( SECONDS < 60 )); do
    if zpty -r -t z line; then out+="$line"; else sleep 0.1; fi
done
zpty -d z
print -r -- "$out"
"#;
    let o = Command::new("zsh")
        .args(["-f", "-c", script, "zsh"])
        .arg(dir)
        .arg(line)
        .output()
        .unwrap();
    let out = text(&o.stdout).replace('\r', "");
    // The echoed line: "@@<buffer>@@" on a line of its own (the typed command line holds "echo @@").
    let strip = |l: &str| {
        let mut s = String::new();
        let mut esc = false;
        for c in l.chars() {
            match (esc, c) {
                (false, '\x1b') => esc = true,
                (true, c) if c.is_ascii_alphabetic() => esc = false,
                (true, _) => {}
                (false, c) => s.push(c),
            }
        }
        s
    };
    out.lines()
        .map(strip)
        .rfind(|l| l.starts_with("@@") && l.ends_with("@@") && l.len() >= 4)
        .map(|l| l[2..l.len() - 2].trim_end().to_string())
        .unwrap_or_else(|| panic!("no echoed line in {out:?}"))
}

#[test]
fn bash_completes_after_the_subcommand_and_hides_hidden_commands() {
    if !have("bash") {
        return;
    }
    let d = generated();
    assert_eq!(bash(d.path(), &["rmp-eval", "ch"]), ["check"]);
    // After the subcommand: the option of that subcommand (the hyphenated name broke this).
    assert_eq!(bash(d.path(), &["rmp-eval", "fix", "--on"]), ["--only"]);
    assert_eq!(bash(d.path(), &["rmp-eval", "check", "--js"]), ["--json"]);
    let top = bash(d.path(), &["rmp-eval", ""]);
    for verb in ["check", "run", "fix", "rollback"] {
        assert!(top.iter().any(|w| w == verb), "{verb} not offered: {top:?}");
    }
    assert!(
        !top.iter().any(|w| w == "apply-saved" || w == "generate"),
        "{top:?}"
    );
}

#[test]
fn fish_completes_verbs_and_options_without_hidden_commands() {
    if !have("fish") {
        return;
    }
    let d = generated();
    assert_eq!(fish(d.path(), "rmp-eval ch"), ["check"]);
    assert_eq!(fish(d.path(), "rmp-eval fix --on"), ["--only"]);
    let all = fish(d.path(), "rmp-eval ");
    assert!(all.iter().any(|w| w == "rollback"), "{all:?}");
    assert!(
        !all.iter().any(|w| w == "apply-saved" || w == "generate"),
        "{all:?}"
    );
}

#[test]
fn zsh_completes_on_a_terminal() {
    if !have("zsh") {
        return;
    }
    let d = generated();
    assert_eq!(zsh(d.path(), "rmp-eval che"), "rmp-eval check");
    assert_eq!(zsh(d.path(), "rmp-eval fix --on"), "rmp-eval fix --only");
    assert_eq!(
        zsh(d.path(), "rmp-eval check --js"),
        "rmp-eval check --json"
    );
    // No hidden command behind "ap" (apply-saved): the line stays as typed.
    assert_eq!(zsh(d.path(), "rmp-eval ap"), "rmp-eval ap");
}
