//! `rmp-eval snapshot OUT`: copies exactly the files the checks read (for every online CPU as the RT core and
//! every network interface) into OUT, a directory or OUT.tar.gz, so that `check --root` on it gives the same
//! verdicts on another machine. Symlinks on the way (/sys/class/net/X, device, driver) are kept as links, and
//! their targets are laid out where the links point.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::checks::{self, Ctx, machine};
use crate::cli::SnapshotArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::{Host, MAX_READ};
use crate::output::Output;

const NET: &str = "/sys/class/net";
/// Symlink chains longer than this are not followed (the kernel's own limit is 40).
const MAX_LINKS: usize = 16;

/// Runs every check the way `check` could be asked to, on a traced Host, and returns the paths they touched
/// and the directories they listed.
pub fn accessed_paths(host: &Host) -> Result<Vec<String>> {
    let (traced, trace) = host.traced();
    let cpus = machine::online_cpus(&traced)
        .map_err(|e| Error::failed(format!("cannot tell which CPUs are online ({e})")))?;
    let last = *cpus.last().ok_or_else(|| Error::failed("no online CPUs"))?;
    for &core in &cpus {
        let ctx = Ctx { core, nic: None };
        let f = checks::run_all(&traced, &ctx);
        let _ = crate::report::check::render_text(&traced, &ctx, &f, Output::plain());
    }
    for nic in traced.list(NET).unwrap_or_default() {
        let ctx = Ctx {
            core: last,
            nic: Some(nic),
        };
        let f = checks::run_all(&traced, &ctx);
        let _ = crate::report::check::render_text(&traced, &ctx, &f, Output::plain());
    }
    Ok(trace.paths())
}

/// `a/b/../c` → `a/c`, for absolute system paths.
fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

/// A link target that stays inside the copy: an absolute target ("/usr/share/zoneinfo/UTC") becomes relative to
/// the link's directory, so that examining the snapshot never reads the examiner's own files.
fn in_root_target(link_dir: &str, target: &str) -> String {
    match target.strip_prefix('/') {
        Some(rest) => {
            let depth = link_dir.split('/').filter(|c| !c.is_empty()).count();
            format!("{}{rest}", "../".repeat(depth))
        }
        None => target.to_string(),
    }
}

struct Copier<'a> {
    src: &'a Host,
    dst: Host,
    copied: usize,
}

impl Copier<'_> {
    /// Resolves `abs` in the source like the kernel would, recreating each symlink met on the way in the
    /// destination; returns the resolved path.
    fn resolve(&mut self, abs: &str, depth: usize) -> io::Result<String> {
        let mut resolved = String::new();
        let comps: Vec<&str> = abs.split('/').filter(|c| !c.is_empty()).collect();
        for comp in comps {
            let cand = format!("{resolved}/{comp}");
            let meta = match fs::symlink_metadata(self.src.path(&cand)) {
                Ok(m) => m,
                Err(_) => {
                    resolved = cand;
                    continue;
                }
            };
            if !meta.file_type().is_symlink() || depth > MAX_LINKS {
                resolved = cand;
                continue;
            }
            let target = fs::read_link(self.src.path(&cand))?;
            let link = self.dst.path(&cand);
            let t = target.to_string_lossy();
            if fs::symlink_metadata(&link).is_err() {
                fs::create_dir_all(self.dst.path(&resolved))?;
                symlink(in_root_target(&resolved, &t), &link)?;
            }
            let joined = if t.starts_with('/') {
                t.to_string()
            } else {
                format!("{resolved}/{t}")
            };
            resolved = self.resolve(&normalize(&joined), depth + 1)?;
        }
        Ok(if resolved.is_empty() {
            "/".into()
        } else {
            resolved
        })
    }

    fn copy(&mut self, abs: &str, listed: bool) -> io::Result<()> {
        let real = self.resolve(abs, 0)?;
        let Ok(meta) = fs::metadata(self.src.path(&real)) else {
            return Ok(());
        };
        if meta.is_dir() {
            fs::create_dir_all(self.dst.path(&real))?;
            if listed {
                self.placeholders(&real)?;
            }
        } else if meta.is_file() {
            // Kernel files may refuse reading (EINVAL for a down link's speed): those stay absent.
            if let Ok(bytes) = self.src.read_bytes(&real) {
                let to = self.dst.path(&real);
                if let Some(d) = to.parent() {
                    fs::create_dir_all(d)?;
                }
                fs::write(&to, &bytes[..bytes.len().min(MAX_READ as usize)])?;
                self.copied += 1;
            }
        }
        Ok(())
    }

    /// Entries of a listed directory that are directories (cpuN, stateN, rx-N, PIDs), and the files of msi_irqs
    /// (their names are the data), so that listing the copy names the same things.
    fn placeholders(&mut self, dir: &str) -> io::Result<()> {
        let Ok(rd) = fs::read_dir(self.src.path(dir)) else {
            return Ok(());
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let to = self.dst.path(&format!("{dir}/{name}"));
            match e.file_type() {
                Ok(t) if t.is_dir() => fs::create_dir_all(&to)?,
                Ok(t) if t.is_file() && dir.ends_with("/msi_irqs") && !to.exists() => {
                    fs::write(&to, b"")?
                }
                Ok(t) if t.is_symlink() && dir == NET => {
                    self.resolve(&format!("{dir}/{name}"), 0)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Copies what the checks read from `src` into the directory `out` (created; must be empty if it exists).
pub fn snapshot_into(src: &Host, out: &Path) -> Result<usize> {
    let paths = accessed_paths(src)?;
    let mut c = Copier {
        src,
        dst: Host::with_root(out),
        copied: 0,
    };
    for p in &paths {
        let listed = src.is_dir(p);
        c.copy(p, listed)
            .map_err(|e| Error::failed(format!("snapshot: copying {p}: {e}")))?;
    }
    if src.is_live() {
        let nics = src.list(NET).unwrap_or_default();
        let facts = crate::checks::system::live_facts(&nics).to_string();
        fs::write(c.dst.path(crate::checks::system::SNAPSHOT_FACTS), facts)
            .map_err(|e| Error::failed(format!("snapshot: facts: {e}")))?;
    } else if let Ok(b) = src.read_bytes(crate::checks::system::SNAPSHOT_FACTS) {
        let _ = fs::write(c.dst.path(crate::checks::system::SNAPSHOT_FACTS), b);
    }
    Ok(c.copied)
}

pub fn execute(host: &Host, _out: Output, args: &SnapshotArgs) -> Result<Outcome> {
    let out = &args.out;
    let name = out.to_string_lossy();
    let tarball = name.ends_with(".tar.gz") || name.ends_with(".tgz");
    let dir: PathBuf = if tarball {
        let tmp = PathBuf::from(format!("{name}.partial-{}", std::process::id()));
        fs::create_dir(&tmp)
            .map_err(|e| Error::failed(format!("snapshot: {}: {e}", tmp.display())))?;
        tmp
    } else {
        if out.exists()
            && fs::read_dir(out)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(Error::usage(format!(
                "snapshot: {name} exists and is not an empty directory"
            )));
        }
        fs::create_dir_all(out).map_err(|e| Error::failed(format!("snapshot: {name}: {e}")))?;
        out.clone()
    };
    let result = snapshot_into(host, &dir).and_then(|n| {
        if tarball {
            write_tar_gz(&dir, out)
                .map_err(|e| Error::failed(format!("snapshot: writing {name}: {e}")))?;
        }
        Ok(n)
    });
    if tarball {
        let _ = fs::remove_dir_all(&dir);
    }
    let n = result?;
    if tarball {
        crate::outln!(
            "snapshot: {n} files in {name}; unpack it and run `rmp-eval --root DIR check`"
        );
    } else {
        crate::outln!("snapshot: {n} files in {name}; run `rmp-eval --root {name} check`");
    }
    Ok(Outcome::Good)
}

fn write_tar_gz(dir: &Path, out: &Path) -> io::Result<()> {
    let f = fs::File::create(out)?;
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(false);
    for e in fs::read_dir(dir)?.flatten() {
        let name = e.file_name();
        if e.file_type()?.is_dir() {
            tar.append_dir_all(Path::new(&name), e.path())?;
        } else {
            tar.append_path_with_name(e.path(), Path::new(&name))?;
        }
    }
    tar.into_inner()?.finish()?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn absolute_links_stay_in_the_copy() {
        assert_eq!(
            super::in_root_target("/etc", "/usr/lib/os-release"),
            "../usr/lib/os-release"
        );
        assert_eq!(
            super::in_root_target("/sys/class/net", "../../devices/x"),
            "../../devices/x"
        );
        assert_eq!(super::in_root_target("", "/a"), "a");
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(
            normalize("/sys/class/net/../../devices/virtual/net/lo"),
            "/sys/devices/virtual/net/lo"
        );
        assert_eq!(normalize("/a/./b//c/.."), "/a/b");
        assert_eq!(normalize("/../.."), "/");
    }
}
