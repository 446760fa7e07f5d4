//! The GRUB files fix reads and writes: /etc/default/grub and the drop-ins in /etc/default/grub.d, our own
//! drop-in (kernel-cmdline/99-rmp-eval.cfg, which reads the managed parameters from /var/lib/rmp-eval/cmdline)
//! and the names it may have. What GRUB makes of them: grub_source.rs.

use crate::host::{Host, HostError};

/// The drop-in installed as /etc/default/grub.d/99-rmp-eval.cfg (see kernel-cmdline/).
pub(crate) const DROPIN: &str = include_str!("../../../../kernel-cmdline/99-rmp-eval.cfg");
pub(crate) const DROPIN_NAME: &str = "99-rmp-eval.cfg";
/// The name fix gives the drop-in when another one sorts after 99-rmp-eval.cfg and undoes its work.
pub(crate) const LATE_NAME: &str = "zz-rmp-eval.cfg";
pub(crate) const GRUB_DEFAULT: &str = "/etc/default/grub";
pub(crate) const GRUB_D: &str = "/etc/default/grub.d";
/// The files fix may write: our drop-in under the names it usually has, and /etc/default/grub.
pub(crate) const FILES: &[&str] = &[
    "/etc/default/grub.d/99-rmp-eval.cfg",
    "/etc/default/grub.d/zz-rmp-eval.cfg",
    GRUB_DEFAULT,
];

/// Why GRUB's files cannot be followed: read, or understood as grub-mkconfig would source them (grub_source.rs).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GrubError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{0}: a name that is not UTF-8")]
    NameNotUtf8(String),
    #[error("{0}: a directory where grub-mkconfig sources a file")]
    Directory(String),
    /// A statement or value the reader does not follow (parse::shell), or the shell's syntax error.
    #[error(transparent)]
    Read(#[from] crate::parse::shell::ShellError),
    #[error("{var} cannot be known without running GRUB's files, which rmp-eval never does: {why}")]
    Unknown { var: &'static str, why: String },
    #[error("{0} is not UTF-8")]
    NotUtf8(String),
}

/// The GRUB files as they are (or as a plan would leave them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// /etc/default/grub (absent: grub-mkconfig skips it).
    pub(crate) default: Option<Vec<u8>>,
    /// grub.d/*.cfg: (name, content).
    pub(crate) dropins: Vec<(String, Vec<u8>)>,
}

impl Layout {
    /// Reads the files through `host`. A .cfg grub-mkconfig would choke on (a directory, a name that is not
    /// UTF-8) is a refusal.
    pub(crate) fn read(host: &Host) -> Result<Layout, GrubError> {
        let default = match host.read_bytes(GRUB_DEFAULT) {
            Ok(b) => Some(b),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let mut dropins = Vec::new();
        let names = match host.list(GRUB_D) {
            Ok(n) => n,
            Err(e) if e.is_not_found() => vec![],
            Err(e) => return Err(e.into()),
        };
        for n in names.into_iter().filter(|n| n.ends_with(".cfg")) {
            let p = format!("{GRUB_D}/{n}");
            if n.contains('\u{fffd}') {
                return Err(GrubError::NameNotUtf8(p));
            }
            if host.is_dir(&p) {
                return Err(GrubError::Directory(p));
            }
            match host.read_bytes(&p) {
                Ok(b) => dropins.push((n, b)),
                // A dangling link: `[ -e ]` is false, grub-mkconfig skips it.
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Layout { default, dropins })
    }

    /// This layout with our drop-in as `name` (and no other copy of ours).
    pub(crate) fn with_ours(&self, name: Option<&str>) -> Layout {
        let mut l = self.clone();
        l.dropins.retain(|(n, _)| !is_ours(n));
        if let Some(n) = name {
            l.dropins.push((n.to_string(), DROPIN.as_bytes().to_vec()));
        }
        l
    }
}

/// Our drop-in's names all end so (99-rmp-eval.cfg, zz-rmp-eval.cfg, or one made to sort after a given name).
pub(crate) fn is_ours(name: &str) -> bool {
    name.ends_with("rmp-eval.cfg")
}

/// A path of our drop-in in /etc/default/grub.d.
pub(crate) fn is_our_dropin_path(path: &str) -> bool {
    path.strip_prefix(GRUB_D)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|n| !n.contains('/') && is_ours(n))
}

/// A name for our drop-in that sorts after `last` (by bytes, as dash's glob sorts, and in the usual locales,
/// which compare the letters first): "zz.cfg" gives "zz~rmp-eval.cfg".
pub(crate) fn name_after(last: &str) -> String {
    format!("{}~rmp-eval.cfg", last.trim_end_matches(".cfg"))
}
