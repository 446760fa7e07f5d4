//! uname(2): what the running kernel says of itself. The files under /proc say the same and also work on a
//! snapshot, so they come first; this answers when /proc is not there to ask (a chroot without it).

use std::ffi::CStr;

/// The running kernel's release (`uname -r`).
pub(crate) fn release() -> std::io::Result<String> {
    // SAFETY: utsname is plain C data (arrays of c_char): all zeroes is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct we pass, which lives across the call.
    super::check(unsafe { libc::uname(&mut u) })?;
    // SAFETY: the kernel NUL-terminates every field of utsname (65 bytes each, at most 64 characters).
    let r = unsafe { CStr::from_ptr(u.release.as_ptr()) };
    Ok(r.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn release_is_what_proc_says() {
        let proc = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(super::release().unwrap(), proc.trim());
    }
}
