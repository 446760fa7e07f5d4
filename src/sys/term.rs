//! The terminal and the process: window size, stdin in raw mode (a guard), read-only prctl queries.

/// Prompts only with a terminal on both stdin and stderr (dialoguer itself checks only stderr).
pub(crate) fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

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

/// stdin in non-canonical mode without echo, reads not waiting (VMIN = VTIME = 0), while this lives; the mode
/// read before is restored on drop, so that the shell gets its terminal back however the run ends.
pub(crate) struct RawStdin {
    saved: libc::termios,
}

impl RawStdin {
    /// None when stdin's mode cannot be read or changed (not a terminal, for one).
    pub(crate) fn enter() -> Option<RawStdin> {
        // SAFETY: termios is plain C data, for which all-zero bytes are a valid value.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr fills the termios we own for fd 0, which stays open for the process's life.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 0;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: tcsetattr reads `raw`, a valid termios derived from the current one.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(RawStdin { saved })
    }

    /// The bytes typed since the last call: empty, at once, when none are waiting.
    pub(crate) fn pending(&self) -> Vec<u8> {
        let mut fds = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut out = Vec::new();
        // SAFETY: poll reads and writes one pollfd we own (count 1), timeout 0.
        while unsafe { libc::poll(&mut fds, 1, 0) } > 0 && fds.revents & libc::POLLIN != 0 {
            let mut buf = [0u8; 16];
            // SAFETY: read writes at most buf.len() bytes into buf, which we own.
            let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        out
    }
}

impl Drop for RawStdin {
    fn drop(&mut self) {
        // SAFETY: tcsetattr reads the termios saved by `enter`, a valid one.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}
