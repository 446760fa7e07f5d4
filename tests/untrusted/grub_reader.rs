//! rmp-eval's reader of GRUB's shell files (`parse::shell`) against the shells grub-mkconfig runs: seeded random
//! files built from the pieces real files and hostile ones are made of. Whatever the reader accepts and fully
//! knows, dash and bash give the same two variables (such a file is assignments only, so sourcing it here is
//! safe); what it does not accept is never handed to a shell.

use crate::common;
use common::Rng;
use common::grub;

const FILES: usize = 1500;

/// Pieces of GRUB files: quoting, expansions, separators, and what the reader must refuse.
const PIECES: &[&str] = &[
    "GRUB_CMDLINE_LINUX=",
    "GRUB_CMDLINE_LINUX_DEFAULT=",
    "X=",
    "export ",
    "unset X",
    "\"",
    "'",
    "\\",
    "\\\"",
    "\\\\",
    "\\$",
    "\\\n",
    "$",
    "$X",
    "${X}",
    "${X:-d e}",
    "${X:+$X }",
    "${X-u}",
    "${X+p}",
    "$GRUB_CMDLINE_LINUX",
    "${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }",
    "$GRUB_CMDLINE_LINUX_DEFAULT",
    " ",
    "\t",
    "\n",
    "\r\n",
    ";",
    "; ",
    "#",
    "# c\n",
    "quiet",
    "isolcpus=1",
    "foo=\"a b\"",
    "a=b=c",
    "é",
    "*",
    ":",
    "~",
    "}",
    "{",
    "=",
    "`true`",
    "$(true)",
    "true",
    "|",
    "&",
    ">",
    "(",
];

/// Values as files write them, balanced, for most statements to be read.
const VALUES: &[&str] = &[
    "\"quiet splash\"",
    "'a=\"x y\" b'",
    "\"$GRUB_CMDLINE_LINUX isolcpus=1\"",
    "\"${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }x=\\\"1 2\\\"\"",
    "plain,1-3",
    "a\\ b",
    "\"\\$x \\` \\\\ \\q\"",
    "${X:-dflt}",
    "\"$X\"'$X'",
    "",
];

/// A file: statements, most of them assignments of a value made of pieces, some pure piece soup.
fn file(rng: &mut Rng) -> String {
    let mut t = String::new();
    for _ in 0..1 + rng.below(5) {
        if rng.below(10) == 0 {
            for _ in 0..1 + rng.below(8) {
                t.push_str(PIECES[rng.below(PIECES.len())]);
            }
        } else {
            t.push_str(PIECES[rng.below(3)]);
            for _ in 0..rng.below(4) {
                if rng.below(3) == 0 {
                    t.push_str(PIECES[rng.below(PIECES.len())]);
                } else {
                    t.push_str(VALUES[rng.below(VALUES.len())]);
                }
            }
        }
        t.push_str(["\n", "; ", "\r\n", " # c\n"][rng.below(4)]);
    }
    t
}

#[test]
fn what_the_reader_accepts_the_shells_source_the_same() {
    let seed: u64 = std::env::var("RMP_EVAL_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_9a0b);
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for i in 0..FILES {
        let files: Vec<(String, String)> = (0..1 + rng.below(2))
            .map(|k| {
                let name = if k == 0 { "grub" } else { "grub.d/50-x.cfg" };
                (name.to_string(), file(&mut rng))
            })
            .collect();
        let Some(read) = grub::read(&files) else {
            continue;
        };
        let _ = std::fs::remove_dir_all(dir.path().join("etc"));
        for (name, text) in &files {
            let p = dir.path().join("etc/default").join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        for shell in ["dash", "bash"] {
            let got = grub::source(dir.path(), shell)
                .unwrap_or_else(|e| panic!("file {i} {files:?}: read, but {shell} fails: {e}"));
            assert_eq!(read, got, "file {i} {files:?}: reader and {shell} differ");
        }
        compared += 1;
    }
    eprintln!("seed {seed}: {FILES} files, {compared} read and compared with dash and bash");
    // The pieces make most files shell errors or commands; enough must be read for the comparison to mean
    // something.
    assert!(compared > FILES / 5, "only {compared} read");
}
