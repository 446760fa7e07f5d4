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

#[test]
fn a_parameter_the_user_added_to_the_state_file_still_takes_effect_after_rollback() {
    let r = Root::untuned();
    let start = r.tree();
    ok(&r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    ));
    // As `sed -i 's/$/ nosmt/'` adds it to fix's one-line state file.
    let state = r.read("/var/lib/rmp-eval/cmdline");
    r.write(
        "/var/lib/rmp-eval/cmdline",
        &state.replace('\n', " nosmt\n"),
    );
    let said =
        "kept: it hands the parameters you added to /var/lib/rmp-eval/cmdline (+nosmt) to GRUB";
    let preview = r.rmp("rollback", &["--dry-run"]);
    assert!(
        String::from_utf8_lossy(&preview.stdout).contains(said),
        "{}",
        text(&preview)
    );
    let o = r.rmp("rollback", &["--yes"]);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(said),
        "{}",
        text(&o)
    );
    // GRUB's next command line: the user's parameter, none of fix's.
    let line = r.grub_line();
    assert!(line.iter().any(|t| t == "nosmt"), "{line:?}");
    assert!(!line.iter().any(|t| t.starts_with("isolcpus=")), "{line:?}");
    // Once the user takes it out, rollback removes the drop-in too (it stayed in the journal for that).
    r.write("/var/lib/rmp-eval/cmdline", "");
    ok(&r.rmp("rollback", &["--yes"]));
    let mut left = diff(&start, &r.tree());
    left.retain(|p| p != "var/lib/rmp-eval/cmdline");
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn the_users_parameters_keep_their_place_through_fix_and_rollback() {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    let user = "root=UUID=0b5e ro quiet isolcpus=2 nohz_full=2 mitigations=off";
    r.write("/etc/kernel/cmdline", &format!("{user}\n"));
    ok(&r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    ));
    let fixed = r.read("/etc/kernel/cmdline");
    assert!(
        fixed.starts_with(
            "root=UUID=0b5e ro quiet isolcpus=managed_irq,domain,1-2 nohz_full=1-2 mitigations=off "
        ),
        "{fixed}"
    );
    // An edit after fix makes rollback take fix's parameters out of the line instead of restoring its bytes.
    r.write("/etc/kernel/cmdline", &fixed.replace('\n', " nosmt\n"));
    ok(&r.rmp("rollback", &["--yes"]));
    assert_eq!(r.read("/etc/kernel/cmdline"), format!("{user} nosmt\n"));
}
