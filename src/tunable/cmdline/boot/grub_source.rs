//! What GRUB will put on the kernel command line, found the way grub-mkconfig finds it: /etc/default/grub, then
//! /etc/default/grub.d/*.cfg in the shell's glob order, sourced by /bin/sh under `set -e`; then
//! GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT read back. The files are copied (read through the Host, so
//! never from outside the root) into a private scratch directory and sourced there by a fixed script that gets
//! the directory as an argument: nothing the files hold is ever put into shell text. Under --root (a tree that is
//! not this machine) the shell runs as nobody. A file the shell fails on, or that takes too long, is a refusal
//! with the shell's own reason, never a guess.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::grub_layout::{DROPIN, GrubError, Layout};
use super::tokens::tokens;
use crate::host::Host;

const TIMEOUT: Duration = Duration::from_secs(20);

/// grub-mkconfig's sourcing, as a fixed script: $1 is the scratch directory. Results go to files there, so that
/// what the sourced files print does not mix with them.
const SCRIPT: &str = r#"set -e
rmp_eval_dir=$1
if test -f "$rmp_eval_dir/grub" ; then
  . "$rmp_eval_dir/grub"
fi
for x in "$rmp_eval_dir"/grub.d/*.cfg ; do
  if [ -e "${x}" ]; then
    printf '%s\n' "${x##*/}" >>"$rmp_eval_dir/order"
    . "${x}"
  fi
done
printf '%s' "$GRUB_CMDLINE_LINUX" >"$rmp_eval_dir/linux"
printf '%s' "$GRUB_CMDLINE_LINUX_DEFAULT" >"$rmp_eval_dir/default"
"#;

/// What sourcing gave: the two variables and the drop-ins in the order the shell sourced them.
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

/// A private scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, GrubError> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = std::env::temp_dir();
        if n == 0 {
            remove_stale_scratch(&tmp);
        }
        let p = tmp.join(format!("rmp-eval-grub.{}.{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).map_err(GrubError::Scratch)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700))
            .map_err(GrubError::Scratch)?;
        Ok(Scratch(p))
    }
    fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), GrubError> {
        let p = self.0.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(GrubError::Copy)?;
        }
        let mut f = std::fs::File::create(&p).map_err(GrubError::Copy)?;
        f.write_all(bytes).map_err(GrubError::Copy)
    }
    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.0.join(rel)).ok()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Scratch directories of a process killed while sourcing (`rmp-eval-grub.PID.N`, PID gone): removed.
fn remove_stale_scratch(tmp: &Path) {
    let Ok(rd) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = n
            .strip_prefix("rmp-eval-grub.")
            .and_then(|r| r.split('.').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = crate::sys::process::is_gone(pid);
        if gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn chown_all(dir: &Path, uid: u32, gid: u32) {
    let _ = std::os::unix::fs::chown(dir, Some(uid), Some(gid));
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                chown_all(&e.path(), uid, gid);
            } else {
                let _ = std::os::unix::fs::chown(e.path(), Some(uid), Some(gid));
            }
        }
    }
}

/// Sources `layout` as grub-mkconfig does, our drop-in(s) reading `state` as the managed parameters.
pub(crate) fn evaluate(host: &Host, layout: &Layout, state: &[u8]) -> Result<Effective, GrubError> {
    let s = Scratch::new()?;
    let state_path = s.0.join("state");
    s.write("state", state)?;
    if let Some(d) = &layout.default {
        s.write("grub", d)?;
    }
    std::fs::create_dir_all(s.0.join("grub.d")).map_err(GrubError::Copy)?;
    for (n, b) in &layout.dropins {
        let text = if b == DROPIN.as_bytes() {
            DROPIN
                .replace(crate::fix::CMDLINE_STATE, &state_path.to_string_lossy())
                .into_bytes()
        } else {
            b.clone()
        };
        s.write(&format!("grub.d/{n}"), &text)?;
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg("grub-mkconfig")
        .arg(&s.0)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for k in ["LANG", "LC_ALL", "LC_COLLATE"] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    // Files from a tree that is not this machine are run with no rights over it.
    if !host.is_live() && crate::sys::process::is_root() {
        use std::os::unix::process::CommandExt;
        chown_all(&s.0, 65534, 65534);
        cmd.uid(65534).gid(65534);
    }
    let mut child = cmd.spawn().map_err(GrubError::Shell)?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if t0.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GrubError::Timeout(TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(GrubError::Shell(e)),
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = (&mut e).take(64 * 1024).read_to_string(&mut err);
    }
    let (Some(linux), Some(default)) = (s.read("linux"), s.read("default")) else {
        let why = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output")
            .replace(&*s.0.to_string_lossy(), "");
        return Err(GrubError::Sourcing { status, why });
    };
    let text =
        |b: Vec<u8>, v: &'static str| String::from_utf8(b).map_err(|_| GrubError::NotUtf8(v));
    Ok(Effective {
        linux: text(linux, "GRUB_CMDLINE_LINUX")?,
        linux_default: text(default, "GRUB_CMDLINE_LINUX_DEFAULT")?,
        order: String::from_utf8_lossy(&s.read("order").unwrap_or_default())
            .lines()
            .map(str::to_string)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::grub_layout::DROPIN_NAME;
    use super::*;

    #[test]
    fn sourced_as_grub_mkconfig_does_quotes_kept_order_reported() {
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
        let h = Host::with_root("/nonexistent-root");
        let e = evaluate(&h, &l.with_ours(Some(DROPIN_NAME)), b"isolcpus=domain,1\n").unwrap();
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
        let err = evaluate(&h, &bad, b"").unwrap_err().to_string();
        assert!(err.contains("failed"), "{err}");
    }
}
