//! rollback does what its preview says and changes nothing when it is refused: a directory fix made that holds a
//! user's file is "left" in the preview as in the real run; a rollback refused for want of a confirmation leaves
//! even the stale temporary files of killed runs, which the confirmed one removes and names.

use crate::common;
use common::fix::{Root, diff, ok, text};

fn fix_sysctl(r: &Root) {
    ok(&r.rmp(
        "fix",
        &["--core", "1", "--only", "sysctl", "--yes", "--no-measure"],
    ));
}

#[test]
fn a_directory_holding_a_users_file_is_left_in_the_preview_as_in_the_run() {
    let r = Root::untuned();
    assert!(!r.exists("/etc/sysctl.d"), "the capture has no sysctl.d");
    fix_sysctl(&r);
    r.write("/etc/sysctl.d/50-mine.conf", "vm.swappiness = 10\n");
    let said = "/etc/sysctl.d: created by fix, holds other files now: left";
    for args in [&["--dry-run"][..], &["--yes"][..]] {
        let o = r.rmp("rollback", args);
        ok(&o);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(said),
            "{args:?}: {}",
            text(&o)
        );
    }
    assert_eq!(r.read("/etc/sysctl.d/50-mine.conf"), "vm.swappiness = 10\n");
    assert!(!r.exists("/etc/sysctl.d/99-rmp-eval.conf"));
}

#[test]
fn a_refused_rollback_changes_nothing_and_a_cleanup_is_reported() {
    let r = Root::untuned();
    fix_sysctl(&r);
    // What a killed fix leaves beside the files it writes (a pid that cannot be running: above pid_max).
    r.write("/etc/sysctl.d/.99-rmp-eval.conf.rmp-eval.4194303", "half");
    r.write("/var/lib/rmp-eval/.runtime.json.rmp-eval.4194303", "half");
    let start = r.tree();
    for args in [&["--json"][..], &[][..]] {
        let o = r.rmp("rollback", args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains("nothing was changed"));
        assert_eq!(diff(&start, &r.tree()), Vec::<String>::new(), "{args:?}");
    }
    let o = r.rmp("rollback", &["--yes"]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Removed 2 temporary file(s) a killed fix or rollback had left:")
            && out.contains("/etc/sysctl.d/.99-rmp-eval.conf.rmp-eval.4194303")
            && out.contains("/var/lib/rmp-eval/.runtime.json.rmp-eval.4194303"),
        "{out}"
    );
    assert!(!r.exists("/etc/sysctl.d/.99-rmp-eval.conf.rmp-eval.4194303"));
}
