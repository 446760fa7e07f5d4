//! The kernel command line on each boot loader, on fixture roots: GRUB (Debian's stock file, a cloud image's
//! drop-in, an existing isolcpus with quotes), systemd-boot / kernel-install, none at all. GRUB's effective line is
//! computed by sourcing the files with dash and bash; rollback leaves every file byte-identical.

use crate::common;
use common::fix as fix_support;
use fix_support::{Root, diff, ok, text, values};

#[test]
fn cloud_dropin_existing_isolcpus_and_quotes() {
    let r = Root::untuned();
    // A 4-CPU machine: the capture has 2; more CPUs are what the case needs.
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    r.write("/etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"isolcpus=2 foo=\\\"a b\\\" console=ttyS0,115200\"\n");
    // As Debian's cloud images ship it: it overrides GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub.
    r.write("/etc/default/grub.d/50-cloudimg-settings.cfg", "# Cloud Image specific Grub settings\nGRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\nGRUB_TIMEOUT=0\n");
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "3", "--only", "cmdline", "--yes", "--no-measure"],
    );
    ok(&o);
    let line = r.grub_line();
    assert_eq!(
        values(&line, "isolcpus"),
        ["managed_irq,domain,2-3"],
        "{line:?}"
    );
    assert_eq!(values(&line, "nohz_full"), ["3"]);
    assert_eq!(values(&line, "irqaffinity"), ["0-1"]);
    assert_eq!(values(&line, "console"), ["ttyS0,115200", "tty1", "ttyS0"]);
    assert!(line.join(" ").contains("foo=\"a b\""), "{line:?}");
    assert!(
        !line.contains(&"quiet".to_string()),
        "the cloud drop-in replaced quiet: {line:?}"
    );
    // The plan's own evaluation of GRUB agrees with the shells.
    let out = String::from_utf8_lossy(&o.stdout);
    let after = common::fix::grub_after_note(&out);
    assert_eq!(fix_support::kernel_tokens(&after), line);
    r.rolls_back_to(&start);
}

#[test]
fn no_boot_loader_says_so_and_changes_nothing() {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    );
    // Not done is not "nothing to change": the machine still falls short, exit 1, with what to do by hand.
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("NOT DONE, set by hand: no boot loader configuration found"),
        "{out}"
    );
    assert!(!out.contains("nothing to change"), "{out}");
    assert!(out.contains("isolcpus=managed_irq,domain,1"), "{out}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn systemd_boot_edits_etc_kernel_cmdline() {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    r.write(
        "/etc/kernel/cmdline",
        "root=UUID=0b5e ro quiet isolcpus=1\n",
    );
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    );
    ok(&o);
    assert_eq!(
        r.read("/etc/kernel/cmdline"),
        "root=UUID=0b5e ro quiet isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0 skew_tick=1\n"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("kernel-install add 6.1.0-50-rt-amd64 /boot/vmlinuz-6.1.0-50-rt-amd64"),
        "{out}"
    );
    r.rolls_back_to(&start);

    // Without /etc/kernel/cmdline: started from the running command line (minus BOOT_IMAGE), removed by rollback.
    r.remove("/etc/kernel/cmdline");
    let start = r.tree();
    ok(&r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    ));
    let written = r.read("/etc/kernel/cmdline");
    assert!(!written.contains("BOOT_IMAGE="), "{written}");
    assert!(
        written.contains("console=ttyS0,115200") && written.contains("nohz_full=1"),
        "{written}"
    );
    r.rolls_back_to(&start);
}

#[test]
fn stock_debian_grub_and_a_second_fix_changes_nothing() {
    let r = Root::untuned();
    let stock = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grub.default"
    ))
    .unwrap();
    r.write("/etc/default/grub", &stock);
    let start = r.tree();
    assert_eq!(r.grub_line(), ["quiet"]);
    ok(&r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "cmdline,sysctl",
            "--yes",
            "--no-measure",
        ],
    ));
    let line = r.grub_line();
    assert_eq!(line[0], "quiet");
    assert_eq!(values(&line, "isolcpus"), ["managed_irq,domain,1"]);
    assert_eq!(
        r.grub_effective("sh").0,
        "",
        "GRUB_CMDLINE_LINUX stays empty"
    );
    let after_first = r.tree();
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "cmdline,sysctl",
            "--yes",
            "--no-measure",
        ],
    );
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Nothing to change"),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&after_first, &r.tree()), Vec::<String>::new());
    r.rolls_back_to(&start);
}

#[test]
fn raspberry_pi_cmdline_txt() {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    // Raspberry Pi OS (bookworm) ships its command line as one line here; this is its stock content.
    let stock = "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait\n";
    r.write("/boot/firmware/cmdline.txt", stock);
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    );
    ok(&o);
    let line = r.read("/boot/firmware/cmdline.txt");
    assert!(line.starts_with(stock.trim_end()), "{line}");
    assert!(
        line.ends_with(
            " isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0 skew_tick=1\n"
        ),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1, "the firmware reads one line");
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("update-grub"),
        "{}",
        text(&o)
    );
    r.rolls_back_to(&start);
}

#[test]
fn raspberry_pi_with_the_package_installed_is_not_grub() {
    // The package puts its GRUB drop-in into /etc/default/grub.d on a Pi too; that alone must not mean GRUB.
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write(
        "/etc/default/grub.d/99-rmp-eval.cfg",
        include_str!("../../kernel-cmdline/99-rmp-eval.cfg"),
    );
    let stock = "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait\n";
    r.write("/boot/firmware/cmdline.txt", stock);
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--yes", "--no-measure"],
    );
    ok(&o);
    let line = r.read("/boot/firmware/cmdline.txt");
    assert!(line.contains(" isolcpus=managed_irq,domain,1 "), "{line}");
    assert!(!r.exists("/var/lib/rmp-eval/cmdline"), "{}", text(&o));
    r.rolls_back_to(&start);
}

#[test]
fn a_second_fix_for_another_core_replaces_the_first_ones_isolation_and_keeps_the_users() {
    let r = Root::untuned();
    r.write("/sys/devices/system/cpu/online", "0-3\n");
    r.write(
        "/etc/default/grub",
        "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"isolcpus=2 console=ttyS0,115200\"\n",
    );
    let start = r.tree();
    let fix = |core: &str| {
        r.rmp(
            "fix",
            &["--core", core, "--only", "cmdline", "--yes", "--no-measure"],
        )
    };
    ok(&fix("3"));
    let line = r.grub_line();
    assert_eq!(values(&line, "isolcpus"), ["managed_irq,domain,2-3"]);
    assert_eq!(values(&line, "irqaffinity"), ["0-1"]);
    // The user changes their mind about the RT core: 3 was fix's doing, 2 the user's.
    let o = fix("1");
    ok(&o);
    let line = r.grub_line();
    assert_eq!(
        values(&line, "isolcpus"),
        ["managed_irq,domain,1-2"],
        "{line:?}"
    );
    assert_eq!(values(&line, "nohz_full"), ["1"], "{line:?}");
    assert_eq!(values(&line, "irqaffinity"), ["0,3"], "{line:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("CPU 3 was isolated by an earlier `rmp-eval fix`"),
        "{out}"
    );
    r.rolls_back_to(&start);
}
