//! The terminal and the process: window size, read-only prctl queries.

/// Columns of the terminal on stdout (TIOCGWINSZ); `None` when stdout is no terminal or reports 0.
pub(crate) fn stdout_columns() -> Option<usize> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills the winsize we pass, which lives across the call.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS): a read-only query (Linux ≥ 6.17).
pub(crate) fn futex_hash_slots() -> std::io::Result<i32> {
    const PR_FUTEX_HASH: libc::c_int = 78;
    const PR_FUTEX_HASH_GET_SLOTS: libc::c_ulong = 2;
    // SAFETY: prctl with integer arguments only; GET_SLOTS reads a count and changes nothing.
    super::check(unsafe { libc::prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0) })
}
