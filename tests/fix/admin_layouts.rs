//! One test per defect, on the captured Debian guest's tree (tests/fixtures/README.md) with the hand-made
//! layouts an administrator meets: symlinked targets, edits after fix, a journal it cannot read, drop-ins that
//! sort after ours, quoted values, shell the old evaluator could not follow, two boot loaders, a Pi's second line.

use crate::common;
use common::fix as fix_support;
use fix_support::{Root, diff, kernel_tokens, ok, text, values};

use std::os::unix::fs::{PermissionsExt, symlink};

fn fix(r: &Root, core: &str, only: &str) -> std::process::Output {
    r.rmp(
        "fix",
        &["--core", core, "--only", only, "--yes", "--no-measure"],
    )
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mode(r: &Root, abs: &str) -> u32 {
    std::fs::metadata(r.path(abs)).unwrap().permissions().mode() & 0o7777
}

/// systemd-boot's layout (the captured guest's GRUB files taken away).
fn systemd_boot(r: &Root, cmdline: &str) {
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    r.write("/etc/kernel/cmdline", cmdline);
}

#[test]
fn d1_symlinked_targets_are_written_through_and_stay_links() {
    let r = Root::untuned();
    systemd_boot(&r, "");
    // As image builders lay it out: the file lives elsewhere in the tree, a relative link points at it.
    r.remove("/etc/kernel/cmdline");
    r.write("/usr/lib/kernel/cmdline", "root=UUID=0b5e ro quiet\n");
    std::fs::set_permissions(
        r.path("/usr/lib/kernel/cmdline"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    symlink(
        "../../usr/lib/kernel/cmdline",
        r.path("/etc/kernel/cmdline"),
    )
    .unwrap();
    let start = r.tree();
    ok(&fix(&r, "1", "cmdline"));
    let link = std::fs::symlink_metadata(r.path("/etc/kernel/cmdline")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert!(r.read("/usr/lib/kernel/cmdline").contains("nohz_full=1"));
    assert_eq!(mode(&r, "/usr/lib/kernel/cmdline"), 0o640, "mode widened");
    r.rolls_back_to(&start);

    // A link to nothing: refused in one line before anything changed.
    r.remove("/usr/lib/kernel/cmdline");
    let start = r.tree();
    let o = fix(&r, "1", "cmdline");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/etc/kernel/cmdline") && err.contains("link to nothing"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn d2_rollback_keeps_what_the_user_changed_after_fix() {
    let r = Root::untuned();
    systemd_boot(&r, "root=UUID=0b5e ro quiet isolcpus=1\n");
    let start = r.tree();
    ok(&fix(&r, "1", "cmdline,sysctl"));
    // The user adds a parameter to the command line and a setting to fix's sysctl file.
    let mut cl = r.read("/etc/kernel/cmdline");
    cl.insert_str(cl.len() - 1, " mine=1");
    r.write("/etc/kernel/cmdline", &cl);
    let conf = r.read("/etc/sysctl.d/99-rmp-eval.conf") + "vm.swappiness = 5\n";
    r.write("/etc/sysctl.d/99-rmp-eval.conf", &conf);
    let o = r.rmp("rollback", &["--yes"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = out(&o);
    assert!(said.contains("+mine=1"), "{said}");
    assert!(
        said.contains("+vm.swappiness = 5") && said.contains("--force"),
        "{said}"
    );
    // fix's parameters out, the old isolcpus back, the user's parameter kept; the sysctl file left as edited.
    assert_eq!(
        r.read("/etc/kernel/cmdline"),
        "root=UUID=0b5e ro quiet isolcpus=1 mine=1\n"
    );
    assert_eq!(r.read("/etc/sysctl.d/99-rmp-eval.conf"), conf);
    // --force puts the rest back; only the user's command-line edit remains.
    let o = r.rmp("rollback", &["--yes", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        diff(&start, &r.tree()),
        vec!["etc/kernel/cmdline".to_string()]
    );
}

#[test]
fn d4_the_lock_is_held_from_before_reading_through_the_prompt() {
    use std::io::Write;
    use std::process::Stdio;
    let r = Root::untuned();
    let start = r.tree();
    ok(&fix(&r, "1", "sysctl"));
    // rollback waits at its terminal prompt (a pseudo-terminal through util-linux `script`)...
    let cmd = format!(
        "{} rollback --root {}",
        fix_support::BIN,
        r.dir.path().display()
    );
    /// Kills the prompt's process if the test fails before answering it (it would wait forever).
    struct Held(Option<std::process::Child>);
    impl Drop for Held {
        fn drop(&mut self) {
            if let Some(c) = &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let mut held = Held(Some(
        common::on_a_terminal("", &cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("util-linux script"),
    ));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // ...meanwhile another fix is refused rather than applied under the prompt's stale view.
    let o = fix(&r, "1", "workqueue");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another rmp-eval fix or rollback is running"),
        "{}",
        text(&o)
    );
    let mut child = held.0.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"y").unwrap();
    stdin.flush().unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn d10_a_journal_it_cannot_read_stops_rollback_and_fix() {
    let r = Root::untuned();
    let start = r.tree();
    ok(&fix(&r, "1", "sysctl"));
    let j = "/var/lib/rmp-eval/journal/000001.json";
    let good = r.read(j);
    let mut null_content: serde_json::Value = serde_json::from_str(&good).unwrap();
    for e in null_content["entries"].as_array_mut().unwrap() {
        if e["kind"] == "file" {
            e["previous"] =
                serde_json::json!({"text": null, "hex": null, "mode": 420, "uid": 0, "gid": 0});
        }
    }
    for (bad, why) in [
        (
            good.replacen("\"version\": 2", "\"version\": 7", 1),
            "version 7",
        ),
        (null_content.to_string(), "no content"),
    ] {
        r.write(j, &bad);
        let before = r.tree();
        let o = r.rmp("rollback", &["--yes"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(j) && err.contains(why), "{err}");
        assert_eq!(diff(&before, &r.tree()), Vec::<String>::new());
        // fix adds no run on top of it.
        let o = fix(&r, "1", "workqueue");
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert_eq!(diff(&before, &r.tree()), Vec::<String>::new());
    }
    r.write(j, &good);
    r.rolls_back_to(&start);
}

#[test]
fn d11_stale_temps_bytes_thp_and_created_directories() {
    let r = Root::untuned();
    systemd_boot(&r, "");
    // Bytes that are not UTF-8 in a parameter of the user's.
    std::fs::write(
        r.path("/etc/kernel/cmdline"),
        b"root=/dev/sda1 ro x=\xff\xfe\n",
    )
    .unwrap();
    r.write(
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    );
    let start = r.tree();
    ok(&fix(&r, "1", "cmdline,thp,sysctl"));
    let now = std::fs::read(r.path("/etc/kernel/cmdline")).unwrap();
    assert!(now.starts_with(b"root=/dev/sda1 ro x=\xff\xfe "), "{now:?}");
    // What a SIGKILLed run leaves: temporary files of a process that is gone.
    let dead = "4194303"; // above pid_max's default: no such process
    for d in ["/etc/kernel", "/var/lib/rmp-eval/journal", "/etc/sysctl.d"] {
        r.write(&format!("{d}/.x.rmp-eval.{dead}"), "half");
    }
    ok(&r.rmp("rollback", &["--yes"]));
    // THP byte for byte, the created /etc/sysctl.d gone, no temporary file left.
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn d5_a_drop_in_sorting_after_ours() {
    let r = Root::untuned();
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    r.write(
        "/etc/default/grub",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n",
    );
    // One wipes _DEFAULT, one appends isolcpus=1: both sort after 99-rmp-eval.cfg.
    r.write(
        "/etc/default/grub.d/99-zzz.cfg",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"splash\"\n",
    );
    r.write(
        "/etc/default/grub.d/local.cfg",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT isolcpus=1\"\n",
    );
    let start = r.tree();
    let o = fix(&r, "3", "cmdline");
    ok(&o);
    let line = r.grub_line();
    assert_eq!(
        values(&line, "isolcpus"),
        ["managed_irq,domain,1,3"],
        "{line:?}"
    );
    assert_eq!(values(&line, "nohz_full"), ["3"], "{line:?}");
    assert!(line.contains(&"splash".to_string()), "{line:?}");
    let said = out(&o);
    let after = common::fix::grub_after_note(&said);
    assert_eq!(
        kernel_tokens(&after),
        line,
        "the plan's after: line is what GRUB gets"
    );
    r.rolls_back_to(&start);
}

#[test]
fn d6_quoted_values_come_out_byte_identical() {
    let r = Root::untuned();
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    r.write(
        "/etc/default/grub",
        "GRUB_CMDLINE_LINUX='foo=\"x isolcpus=2\" bar=\"a  b\" isolcpus=2'\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
    );
    let start = r.tree();
    ok(&fix(&r, "3", "cmdline"));
    let line = r.grub_line();
    assert_eq!(
        line[..3],
        ["foo=\"x isolcpus=2\"", "bar=\"a  b\"", "quiet"],
        "{line:?}"
    );
    assert_eq!(
        values(&line, "isolcpus"),
        ["managed_irq,domain,2-3"],
        "{line:?}"
    );
    r.rolls_back_to(&start);
}

#[test]
fn d7_shell_is_evaluated_as_grub_mkconfig_does_or_refused() {
    let r = Root::untuned();
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    // Two assignments on a line, a value over two lines, ${X:+…}: the user's isolcpus=2 must survive.
    r.write(
        "/etc/default/grub",
        "X=1; GRUB_CMDLINE_LINUX=\"isolcpus=2\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\nsplash\"\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX${X:+ x=$X}\"\n",
    );
    let start = r.tree();
    ok(&fix(&r, "3", "cmdline"));
    let line = r.grub_line();
    assert_eq!(
        values(&line, "isolcpus"),
        ["managed_irq,domain,2-3"],
        "{line:?}"
    );
    assert!(
        line.contains(&"x=1".to_string()) && line.contains(&"splash".to_string()),
        "{line:?}"
    );
    r.rolls_back_to(&start);
    // What grub-mkconfig itself would stop on: refused with the file and line, nothing changed, exit 1.
    r.write(
        "/etc/default/grub.d/50-broken.cfg",
        "GRUB_CMDLINE_LINUX=\"unterminated\n",
    );
    let start = r.tree();
    let o = fix(&r, "3", "cmdline");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        out(&o).contains(
            "refused: GRUB: /etc/default/grub.d/50-broken.cfg line 1: unterminated double quote"
        ),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn d8_the_loader_that_boots_is_the_one_edited() {
    let r = Root::untuned();
    // A leftover /etc/default/grub next to systemd-boot, which says it booted the machine.
    r.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    r.write("/etc/kernel/cmdline", "root=UUID=0b5e ro quiet\n");
    r.write(
        "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
        "\u{6}\0\0\0systemd-boot 252",
    );
    r.write("/proc/cmdline", "root=UUID=0b5e ro quiet\n");
    let start = r.tree();
    let o = fix(&r, "1", "cmdline");
    ok(&o);
    assert!(r.read("/etc/kernel/cmdline").contains("nohz_full=1"));
    assert!(
        out(&o).contains("/etc/default/grub is not used"),
        "{}",
        text(&o)
    );
    let changed = diff(&start, &r.tree());
    assert!(!changed.iter().any(|p| p.contains("grub")), "{changed:?}");
    ok(&r.rmp("rollback", &["--yes"]));
    // Nothing says which one boots: refused, nothing changed.
    r.remove("/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f");
    let start = r.tree();
    let o = fix(&r, "1", "cmdline");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        out(&o).contains("cannot tell which boot loader"),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn d9_pi_cmdline_txt_first_line_only() {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    let first = "console=serial0,115200 root=PARTUUID=4e639091-02 rootwait\n";
    let rest = "# isolcpus=2 tried once\nnotes\n";
    r.write("/boot/firmware/cmdline.txt", &format!("{first}{rest}"));
    let start = r.tree();
    ok(&fix(&r, "1", "cmdline"));
    let now = r.read("/boot/firmware/cmdline.txt");
    let (l1, l2) = now.split_once('\n').unwrap();
    assert_eq!(
        l1,
        "console=serial0,115200 root=PARTUUID=4e639091-02 rootwait isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0 skew_tick=1"
    );
    assert_eq!(l2, rest);
    r.rolls_back_to(&start);
}
