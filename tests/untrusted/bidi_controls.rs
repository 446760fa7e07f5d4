//! Bidirectional-text controls from a tree (a right-to-left override in the host name, an isolate in a kernel
//! value, an override in a process name) never reach check's text, its JSON or stderr raw: they are shown escaped, as control
//! bytes are, so that no input can make a customer's result read as another.

use crate::common;

use common::check::{run, text};
use common::fix::Root;

const BIDI: &[char] = &[
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
];

fn raw_bidi(s: &str) -> Option<char> {
    s.chars().find(|c| BIDI.contains(c))
}

#[test]
fn bidi_controls_from_a_tree_are_escaped_in_text_json_and_stderr() {
    let r = Root::untuned();
    let all: String = BIDI.iter().collect();
    r.write("/proc/sys/kernel/hostname", &format!("rt{all}ssap\n"));
    r.write("/proc/sys/kernel/timer_migration", "1\u{202e}0\u{2066}\n");
    let root = r.dir.path().to_str().unwrap().to_string();
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["--root", &root, "check", "--core", "1"];
        args.extend_from_slice(extra);
        let o = run(&args);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(
            out.contains("u{202a}"),
            "the host name is shown escaped: {out}"
        );
        assert_eq!(raw_bidi(&out), None, "{extra:?}: {out}");
        assert_eq!(raw_bidi(&err), None, "{extra:?}: {err}");
    }
    // An error naming what was given, with an override in it: one line on stderr, escaped.
    let o = run(&[
        "--root",
        &root,
        "check",
        "--core",
        "1",
        "--process",
        "ed\u{202e}ti",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("ed\\u{202e}ti"), "{err}");
    assert_eq!(raw_bidi(&err), None, "{err}");
}
