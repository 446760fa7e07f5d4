//! Single keys from a terminal during a run (`r` resets the statistics, `q` ends the run): stdin in
//! non-canonical mode without echo while the guard lives, read without blocking; restored on drop.

use std::io::IsTerminal;

pub(crate) struct Keys {
    saved: libc::termios,
}

impl Keys {
    /// None when stdin is not a terminal (or its mode cannot be changed): then no keys are read.
    pub(crate) fn on_terminal() -> Option<Keys> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        // SAFETY: termios is plain data; tcgetattr fills it (0 on success) for fd 0, which is open.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `saved` lives across the call.
        if unsafe { libc::tcgetattr(0, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 0;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is a valid termios derived from the current one.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(Keys { saved })
    }

    /// The keys typed since the last call (none waiting: empty, at once).
    pub(crate) fn pending(&self) -> Vec<u8> {
        let mut fds = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut out = Vec::new();
        // SAFETY: one valid pollfd, timeout 0.
        while unsafe { libc::poll(&mut fds, 1, 0) } > 0 && fds.revents & libc::POLLIN != 0 {
            let mut buf = [0u8; 16];
            // SAFETY: reads at most buf.len() bytes into buf.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        out
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        // SAFETY: restores the termios read in on_terminal.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.saved) };
    }
}
