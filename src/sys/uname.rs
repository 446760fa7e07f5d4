//! uname(2): what the running kernel says of itself. The files under /proc say the same and also work on a
//! snapshot, so they come first; this answers when /proc is not there to ask (a chroot without it).

use std::ffi::CStr;

/// The fields of uname(2) rmp-eval reads.
pub(crate) struct Uname {
    /// `uname -r`.
    pub(crate) release: String,
    /// `uname -n`: the hostname.
    pub(crate) nodename: String,
}

pub(crate) fn uname() -> std::io::Result<Uname> {
    // SAFETY: utsname is plain C data (arrays of c_char): all zeroes is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct we pass, which lives across the call.
    super::check(unsafe { libc::uname(&mut u) })?;
    let field = |f: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates every field of utsname (65 bytes each, at most 64 characters), and
        // `f` borrows the struct, which lives until the end of this function.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Ok(Uname {
        release: field(&u.release),
        nodename: field(&u.nodename),
    })
}

/// The running kernel's release (`uname -r`).
pub(crate) fn release() -> std::io::Result<String> {
    uname().map(|u| u.release)
}

#[cfg(test)]
mod tests {
    #[test]
    fn release_and_nodename_are_what_proc_says() {
        let proc = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(super::release().unwrap(), proc.trim());
        let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::uname().unwrap().nodename, proc.trim());
    }
}
