//! Helpers of the fix tests: a fixture root unpacked from a real capture, a hash of its whole tree, the binary,
//! and GRUB's effective command line computed by sourcing the files with a real shell.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A command line split as the kernel splits it (lib/cmdline.c, `next_arg`): on whitespace, except between double
/// quotes, which stay in the token (as /proc/cmdline shows them). Written here, apart from fix's own splitter, so
/// that fix's lines are judged by the kernel's rule and not by fix's reading of it.
pub fn kernel_tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut token = String::new();
    let mut quoted = false;
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if c.is_whitespace() && !quoted {
            if !token.is_empty() {
                out.push(std::mem::take(&mut token));
            }
        } else {
            token.push(c);
        }
    }
    if !token.is_empty() {
        out.push(token);
    }
    out
}

pub const BIN: &str = env!("CARGO_BIN_EXE_rmp-eval");
/// Captured from a Debian 12 PREEMPT_RT guest (qemu, 2 vCPUs) booted through GRUB: see tests/fixtures/README.md.
pub const UNTUNED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/debian12-rt-qemu-untuned.tar.gz"
);

/// The hand-made 8-thread SMT desktop (tests/fixtures/README.md: an i7-7700, CPU N's SMT sibling is N+4).
pub const DESKTOP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/desktop-i7-smt-untuned"
);

/// The boot a tree starts in, and the one after its reboot.
pub const BOOT_A: &str = "6a1f0d7e-9a43-4c59-9c7e-000000000001\n";
pub const BOOT_B: &str = "6a1f0d7e-9a43-4c59-9c7e-000000000002\n";

/// A captured sample's bytes (tests/fixtures/samples).
pub fn sample_bytes(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/samples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

pub struct Root {
    pub dir: tempfile::TempDir,
}

/// path → (content or link target, mode, uid, gid): equal maps mean byte-identical trees.
pub type Tree = BTreeMap<String, (Vec<u8>, u32, u32, u32)>;

impl Root {
    pub fn untuned() -> Root {
        let dir = tempfile::Builder::new()
            .prefix("fx-root-")
            .tempdir()
            .unwrap();
        let st = Command::new("tar")
            .arg("xzf")
            .arg(UNTUNED)
            .arg("-C")
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "cannot unpack {UNTUNED}");
        Root { dir }
    }

    /// The untuned capture with GRUB's generated files from the VM image (tests/fixtures/samples: grub.cfg and
    /// grubenv), in a boot of known id on ext4: where a trial boot can be armed.
    pub fn untuned_grub() -> Root {
        let r = Root::untuned();
        for (path, sample) in [
            ("/boot/grub/grub.cfg", "grub-cfg-debian12-rt-qemu.txt"),
            ("/boot/grub/grubenv", "grubenv-debian12-rt-qemu.bin"),
        ] {
            std::fs::create_dir_all(r.path("/boot/grub")).unwrap();
            std::fs::write(r.path(path), sample_bytes(sample)).unwrap();
        }
        r.write("/proc/sys/kernel/random/boot_id", BOOT_A);
        r.write("/proc/mounts", "/dev/vda1 / ext4 rw,relatime 0 0\n");
        r
    }

    /// A copy of the SMT desktop, with GRUB's defaults file (Debian's) so that the command line has a loader.
    pub fn desktop() -> Root {
        let dir = tempfile::Builder::new()
            .prefix("fx-desktop-")
            .tempdir()
            .unwrap();
        let st = Command::new("cp")
            .args(["-a", &format!("{DESKTOP}/.")])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "cp -a {DESKTOP}");
        let r = Root { dir };
        r.write(
            "/etc/default/grub",
            "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_DISTRIBUTOR=Debian\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n\
             GRUB_CMDLINE_LINUX=\"\"\n",
        );
        r
    }

    /// The untuned capture with tests/fixtures/cgroup/OVERLAY laid over it (a cgroup tree of another layout).
    pub fn untuned_with_cgroup(overlay: &str) -> Root {
        let r = Root::untuned();
        r.overlay_cgroup(overlay);
        r
    }

    /// The desktop capture on systemd with a valid cgroup v2 tree (where the cpuset step plans a partition).
    pub fn desktop_with_cgroup_v2() -> Root {
        let r = Root::desktop();
        r.overlay_cgroup("valid");
        std::fs::create_dir_all(r.path("/run/systemd/system")).unwrap();
        r
    }

    fn overlay_cgroup(&self, overlay: &str) {
        let src = format!(
            "{}/tests/fixtures/cgroup/{overlay}/.",
            env!("CARGO_MANIFEST_DIR")
        );
        let st = Command::new("cp")
            .args(["-a", &src])
            .arg(self.dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "cp -a {src}");
    }

    pub fn path(&self, abs: &str) -> PathBuf {
        self.dir.path().join(abs.trim_start_matches('/'))
    }
    pub fn write(&self, abs: &str, text: &str) {
        let p = self.path(abs);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn read(&self, abs: &str) -> String {
        std::fs::read_to_string(self.path(abs)).unwrap_or_else(|e| panic!("{abs}: {e}"))
    }
    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }
    pub fn remove(&self, abs: &str) {
        let p = self.path(abs);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }

    /// Every file and symlink under the root with its bytes, mode and owner.
    pub fn tree(&self) -> Tree {
        let mut t = Tree::new();
        walk(self.dir.path(), self.dir.path(), &mut t);
        t
    }

    /// `rollback --yes` succeeds and leaves the tree byte for byte as `start`.
    pub fn rolls_back_to(&self, start: &Tree) {
        ok(&self.rmp("rollback", &["--yes"]));
        assert_eq!(diff(start, &self.tree()), Vec::<String>::new());
    }

    /// Runs `rmp-eval <cmd> --root ROOT <args>` with no terminal (stdin null).
    pub fn rmp(&self, cmd: &str, args: &[&str]) -> Output {
        self.rmp_env(cmd, args, &[])
    }
    pub fn rmp_env(&self, cmd: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(BIN);
        c.arg(cmd)
            .arg("--root")
            .arg(self.dir.path())
            .args(args)
            .stdin(std::process::Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    /// GRUB_CMDLINE_LINUX and _DEFAULT as grub-mkconfig sees them in this root (`grub::source`), which must
    /// succeed.
    pub fn grub_effective(&self, shell: &str) -> (String, String) {
        super::grub::source(self.dir.path(), shell).unwrap_or_else(|e| panic!("{shell}: {e}"))
    }

    /// The effective line of normal entries, checked to be the same under dash and bash.
    pub fn grub_line(&self) -> Vec<String> {
        let dash = self.grub_effective("sh");
        let bash = self.grub_effective("bash");
        assert_eq!(dash, bash, "dash and bash disagree");
        kernel_tokens(&format!("{} {}", dash.0, dash.1))
    }
}

fn walk(base: &Path, dir: &Path, t: &mut Tree) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
        if m.file_type().is_symlink() {
            let target = std::fs::read_link(&p).unwrap();
            t.insert(
                rel,
                (
                    target.to_string_lossy().as_bytes().to_vec(),
                    m.mode(),
                    m.uid(),
                    m.gid(),
                ),
            );
        } else if m.is_dir() {
            // Directories count (a directory fix created must go with rollback), except the program's own
            // state directories, which stay.
            if !"var/lib/rmp-eval/journal".starts_with(&rel) {
                t.insert(format!("{rel}/"), (vec![], m.mode(), m.uid(), m.gid()));
            }
            walk(base, &p, t);
        } else {
            t.insert(
                rel,
                (std::fs::read(&p).unwrap(), m.mode(), m.uid(), m.gid()),
            );
        }
    }
}

/// The names of the files that differ between two trees (for a readable assertion).
pub fn diff(a: &Tree, b: &Tree) -> Vec<String> {
    let mut d: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    d.dedup();
    d
}

pub fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Values of a parameter in a token list.
pub fn values<'a>(line: &'a [String], name: &str) -> Vec<&'a str> {
    line.iter()
        .filter_map(|t| t.strip_prefix(&format!("{name}=")))
        .collect()
}

/// Removes a network link (and a veth's peer with it) even when the test fails.
pub struct Link(pub String);

impl Link {
    /// A veth pair NAME / NAMEp in this namespace (the live tests' NIC without hardware), removed when dropped.
    pub fn veth(name: &str) -> Link {
        Link::add(name, &["type", "veth", "peer", "name", &format!("{name}p")])
    }

    /// A tap device (an ethtool driver with coalescing settings to change), removed when dropped.
    pub fn tap(name: &str) -> Link {
        let st = Command::new("ip")
            .args(["tuntap", "add", "dev", name, "mode", "tap"])
            .status()
            .unwrap();
        assert!(st.success(), "ip tuntap add {name}");
        Link(name.to_string())
    }

    fn add(name: &str, how: &[&str]) -> Link {
        let st = Command::new("ip")
            .args(["link", "add", name])
            .args(how)
            .status()
            .unwrap();
        assert!(st.success(), "ip link add {name} {how:?}");
        Link(name.to_string())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

/// The command line fix's plan says GRUB's normal entries get (the backquoted value of the note "GRUB, normal
/// entries, after:", which the plan may have moved whole to the next line).
pub fn grub_after_note(plan: &str) -> String {
    let at = plan
        .find("note: GRUB, normal entries, after:")
        .unwrap_or_else(|| panic!("no after: note in {plan}"));
    let rest = &plan[at..];
    let open = rest.find('`').expect("a backquoted command line") + 1;
    let close = open + rest[open..].find('`').expect("its closing backquote");
    rest[open..close].to_string()
}

/// Runs `rmp-eval CMD --root ROOT ARGS` until fix's executor pauses between two changes (the test seam
/// RMP_EVAL_TEST_PAUSE_FILE), and kills it there (SIGKILL).
pub fn killed_mid_run(r: &Root, cmd: &str, args: &[&str]) {
    killed_at_seam(r, cmd, args, ("RMP_EVAL_TEST_PAUSE_FILE", ""), |_| true);
}

/// `cmd` run on the root with a pausing test seam armed (`seam`: its variable and the value before the flag's
/// path), SIGKILLed at the first pause whose flag text `here` accepts; the pauses before it are let go.
pub fn killed_at_seam(
    r: &Root,
    cmd: &str,
    args: &[&str],
    seam: (&str, &str),
    here: impl Fn(&str) -> bool,
) {
    use std::time::{Duration, Instant};
    let scratch = tempfile::tempdir().unwrap();
    let flag = scratch.path().join("paused");
    let mut child = Command::new(BIN)
        .args([cmd, "--root"])
        .arg(r.dir.path())
        .args(args)
        .env(seam.0, format!("{}{}", seam.1, flag.display()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(60), "{cmd} never paused");
        assert!(
            child.try_wait().unwrap().is_none(),
            "{cmd} ended before pausing"
        );
        // The seam writes the flag whole in one write; an empty read is a write under way.
        match std::fs::read_to_string(&flag) {
            Ok(t) if !t.is_empty() && here(&t) => break,
            Ok(t) if !t.is_empty() => std::fs::remove_file(&flag).unwrap(),
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// How many journal runs the root holds.
pub fn journal_runs(r: &Root) -> usize {
    std::fs::read_dir(r.path("/var/lib/rmp-eval/journal")).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".json")
        })
        .count()
    })
}

/// The machine boots GRUB's trial entry (custom.cfg): a new boot id (BOOT_B) and the command line that entry
/// gives. Returns its parameters (the kernel image aside).
pub fn boot_grub_trial(r: &Root) -> String {
    let custom = r.read("/boot/grub/custom.cfg");
    let linux = custom
        .lines()
        .find_map(|l| l.trim().strip_prefix("linux"))
        .unwrap()
        .trim()
        .to_string();
    grub_spends_next_entry(r);
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    r.write("/proc/cmdline", &format!("BOOT_IMAGE={linux}\n"));
    linux
        .split_once(' ')
        .map_or(String::new(), |(_, params)| params.to_string())
}

/// A tree through fix's trial boot of the kernel command line on CPU 1: `fix --trial-boot`, the boot, the
/// after-boot unit's judgement, and the rollback back to every byte the tree started with.
pub struct Trial {
    pub r: Root,
    /// The tree as it was before fix.
    pub start: Tree,
}

/// The files a boot made by hand changes: the rollback puts back the boot the test started in.
const BOOT_FILES: [&str; 3] = [
    "proc/cmdline",
    "proc/sys/kernel/random/boot_id",
    "sys/devices/system/cpu/isolated",
];

impl Trial {
    pub fn on(r: Root) -> Trial {
        let start = r.tree();
        Trial { r, start }
    }

    /// `fix --core 1 --only ONLY --trial-boot --yes` and `more`, which must succeed: its output.
    pub fn fix(&self, only: &str, more: &[&str]) -> String {
        let args = [
            &["--core", "1", "--only", only, "--trial-boot", "--yes"],
            more,
        ]
        .concat();
        let o = self.r.rmp("fix", &args);
        ok(&o);
        text(&o)
    }

    /// The after-boot unit's command in the boot the tree is in, which must succeed: its output.
    pub fn after_boot(&self) -> String {
        let o = self.r.rmp("after-boot", &[]);
        ok(&o);
        text(&o)
    }

    /// The machine boots GRUB's trial entry: a new boot, its command line, CPU 1 isolated.
    pub fn boot_grub(&self) {
        boot_grub_trial(&self.r);
        self.r.write("/sys/devices/system/cpu/isolated", "1\n");
    }

    /// Puts back the boot the test started in, then `rollback --yes` leaves every file as at the start.
    pub fn rolls_back(&self) {
        for f in BOOT_FILES {
            let p = self.r.path(&format!("/{f}"));
            match self.start.get(f) {
                Some(x) => std::fs::write(p, &x.0).unwrap(),
                None if p.exists() => std::fs::remove_file(p).unwrap(),
                None => {}
            }
        }
        ok(&self.r.rmp("rollback", &["--yes"]));
        assert_eq!(diff(&self.start, &self.r.tree()), Vec::<String>::new());
    }
}

/// What GRUB does as it boots next_entry: grub.cfg's header empties the value in place with save_env (the
/// 1024-byte block padded back with '#').
pub fn grub_spends_next_entry(r: &Root) {
    let env = r.read("/boot/grub/grubenv");
    let mut b = env
        .replacen("\nnext_entry=rmp-eval-trial\n", "\nnext_entry=\n", 1)
        .into_bytes();
    b.resize(env.len(), b'#');
    std::fs::write(r.path("/boot/grub/grubenv"), b).unwrap();
}
