//! What a journal may ask rollback to restore. A journal is read from the machine's /var/lib/rmp-eval, or from a
//! tree under `--root` that anyone may have written: an entry fix could never have written is refused, so that
//! rollback cannot be made to create a setuid file or rewrite a credential file.

use super::Entry;

/// Files fix never writes, and a journal may not name (their backups and directories included).
const NEVER: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/passwd",
    "/etc/group",
    "/etc/sudoers",
];

/// Why `e` is not an entry fix could have written, if it is not.
pub(super) fn entry(e: &Entry) -> Result<(), String> {
    if let Entry::File(f) = e
        && let Some(p) = &f.previous
        && p.mode & !0o777 != 0
    {
        return Err(format!(
            "{}: mode {:o} has setuid, setgid or sticky bits, which fix never records",
            f.path, p.mode
        ));
    }
    match e {
        Entry::Ethtool(_) => Ok(()),
        _ => path(e.path()),
    }
}

fn path(p: &str) -> Result<(), String> {
    let plain = p.starts_with('/')
        && p.len() > 1
        && !p.contains('\0')
        && p[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if !plain {
        return Err(format!(
            "{p:?}: not an absolute path without `.`, `..` or empty parts"
        ));
    }
    if NEVER.iter().any(|n| p.starts_with(n)) {
        return Err(format!("{p}: a file fix never writes"));
    }
    Ok(())
}
