use super::*;

fn read(files: &[(&str, &str)]) -> Result<Vars, ShellError> {
    let mut v = Vars::default();
    for (name, text) in files {
        source(name, text, &mut v)?;
    }
    Ok(v)
}

fn set(v: &Vars, name: &str) -> String {
    match v.get(name) {
        Some(Var::Set(s)) => s.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

fn unknown(v: &Vars, name: &str) -> String {
    match v.get(name) {
        Some(Var::Unknown(w)) => w.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn stock_debian_12_grub_file_reads_its_command_line_and_not_its_distributor() {
    // Debian 12's /etc/default/grub as grub2-common installs it (tests/fixtures/grub.default).
    let stock = include_str!("../../../tests/fixtures/grub.default");
    let v = read(&[("/etc/default/grub", stock)]).unwrap();
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX_DEFAULT"), "quiet");
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX"), "");
    assert_eq!(set(&v, "GRUB_TIMEOUT"), "5");
    // `lsb_release -i -s 2> /dev/null || echo Debian` in backquotes: not run, and said where.
    assert_eq!(
        unknown(&v, "GRUB_DISTRIBUTOR"),
        "/etc/default/grub line 8: a command substitution `…` is not run"
    );
    // The captured Debian 12 RT guest's file and its init-select.cfg drop-in (comments only).
    let guest = include_str!("../../../tests/fixtures/debian12-rt-qemu-untuned/etc/default/grub");
    let dropin = include_str!(
        "../../../tests/fixtures/debian12-rt-qemu-untuned/etc/default/grub.d/init-select.cfg"
    );
    let v = read(&[("g", guest), ("d", dropin)]).unwrap();
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX"), "console=ttyS0,115200");
    assert_eq!(
        set(&v, "GRUB_SERIAL_COMMAND"),
        "serial --speed=115200 --unit=0"
    );
}

#[test]
fn other_distributions_stock_files() {
    // Ubuntu 22.04's and Debian 13's distributor lines, Fedora's $(sed …) with quotes and `$` inside.
    let v = read(&[(
        "u",
        "GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`\n\
         GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n\
         GRUB_DISTRIBUTOR=\"$(sed 's, release .*$,,g' /etc/system-release)\"\n\
         GRUB_CMDLINE_LINUX=\"rhgb quiet\"\n\
         GRUB_DISABLE_SUBMENU=true\n",
    )])
    .unwrap();
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX_DEFAULT"), "quiet splash");
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX"), "rhgb quiet");
    assert!(
        unknown(&v, "GRUB_DISTRIBUTOR")
            .ends_with("line 3: a command substitution `$(…)` is not run")
    );
}

#[test]
fn quoting_expansion_continuations_and_drop_ins() {
    let v = read(&[
        (
            "g",
            "export GRUB_CMDLINE_LINUX='a=\"x y\" b'\n\
             X=1; GRUB_CMDLINE_LINUX_DEFAULT=\"q \\\"c\\\" \\$d \\` \\\\ \\e\"  # comment\n\
             Y=a\\ b\\\n\
             c Z=\"$Y\"'$Y'${Y}\n\
             W=${X:+x=$X}${NOPE_GRUB_:-}${GRUB_NEVER:-dflt}${GRUB_NEVER-d2}${X:-no}${X+yes}\r\n",
        ),
        (
            "d",
            "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX foo\"\nunset X\nV=${X:+set}\n",
        ),
    ])
    .unwrap();
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX"), "a=\"x y\" b foo");
    assert_eq!(set(&v, "GRUB_CMDLINE_LINUX_DEFAULT"), "q \"c\" $d ` \\ \\e");
    assert_eq!(set(&v, "Y"), "a bc");
    assert_eq!(set(&v, "Z"), "a bc$Ya bc");
    // NOPE_GRUB_ is never set and not a GRUB_ name: unknown, so W is.
    assert!(unknown(&v, "W").contains("$NOPE_GRUB_ is not set"));
    assert_eq!(set(&v, "V"), "");
    let v = read(&[(
        "g",
        "X=1\nW=${X:+x=$X}${GRUB_NEVER:-dflt}${GRUB_NEVER-d2}${X:-no}${X+yes}\r\n",
    )])
    .unwrap();
    assert_eq!(set(&v, "W"), "x=1dfltd21yes\r");
}

#[test]
fn commands_are_never_run_and_name_the_file_and_line() {
    // The attack of a hostile snapshot: a command after the assignments.
    let e = read(&[(
        "/etc/default/grub",
        "GRUB_CMDLINE_LINUX=\"quiet\"\ntouch /tmp/pwned-$(id -u)\n",
    )])
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/default/grub line 2: `touch` is a command, not an assignment: GRUB's files are read here, never run"
    );
    for (text, what) in [
        (
            "A=1 setsid sh -c 'sleep 100' &\n",
            "line 1: `setsid` after an assignment",
        ),
        ("if true; then A=1; fi\n", "`if` is a command"),
        (". /etc/foo\n", "`.` is a command"),
        ("f() { A=1; }\n", "`f` is a command"),
        ("A=1 | B=2\n", "a pipe"),
        ("A=1 >/tmp/x\n", "a redirection"),
        ("A=$((1+2))\n", "arithmetic"),
        ("A=\"x\n", "line 1: unterminated double quote"),
        ("\n\nA='x\n", "line 3: unterminated single quote"),
        ("A=`x\n", "unterminated backquote"),
        ("A=$(x\n", "unterminated `$(`"),
        ("A=${B:=x}\n", "with this operator"),
        ("A=${#B}\n", "special parameter"),
        ("A=1;;\n", "`;;`"),
        ("; A=1\n", "`;` with no command"),
        ("A=$'x'\n", "dash and bash"),
        ("export -n A\n", "export `-n`"),
        ("GRUB_CMDLINE_LINUX+=\" x\"\n", "a command"),
    ] {
        let e = read(&[("f", text)]).unwrap_err().to_string();
        assert!(e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn what_depends_on_the_environment_is_unknown() {
    let v = read(&[(
        "f",
        "A=~/x\nB=$HOME\nC=$1\nD=x:~\nE=\"$A\"\nexport F=$GRUB_X\nG=$B\nB=known\n",
    )])
    .unwrap();
    assert!(unknown(&v, "A").contains("`~`"));
    assert!(unknown(&v, "C").contains("`$1`"));
    assert!(unknown(&v, "D").contains("`~`"));
    assert_eq!(unknown(&v, "E"), unknown(&v, "A"));
    assert!(unknown(&v, "F").contains("split differently"));
    assert!(unknown(&v, "G").contains("$HOME"));
    assert_eq!(set(&v, "B"), "known");
}

#[test]
fn bounded_whatever_the_input() {
    let mut text = String::from("A=xxxxxxxxxxxxxxxx\n");
    for _ in 0..20 {
        text.push_str("A=$A$A\n");
    }
    let e = read(&[("f", &text)]).unwrap_err();
    assert!(e.to_string().contains("longer than 64 KiB"), "{e}");
    let text = format!("A={}\n{}", "x".repeat(60_000), "B=$A\n".repeat(400));
    let e = read(&[("f", &text)]).unwrap_err();
    assert!(e.to_string().contains("16 MiB"), "{e}");
}
