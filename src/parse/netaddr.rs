//! Interface addresses without syscalls: IPv6 from /proc/net/if_inet6, IPv4 from /proc/net/fib_trie (its local
//! /32 host addresses) matched against the link routes of /proc/net/route (fib_trie names no interfaces).

use super::route::Route4;

/// Number of IPv6 addresses of `iface` in /proc/net/if_inet6; None when a line is not in that format.
pub fn v6_count(if_inet6: &str, iface: &str) -> Option<usize> {
    let mut n = 0;
    for l in if_inet6.lines().filter(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 6 || w[0].len() != 32 || !w[0].bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        if w[5] == iface {
            n += 1;
        }
    }
    Some(n)
}

/// The local IPv4 addresses ("/32 host LOCAL" leaves) in /proc/net/fib_trie, distinct, in host order. None
/// when the text does not start with a table's name ("Main:", "Local:"): the kernel always prints its tables,
/// so an empty or garbled file is not "no addresses".
pub fn fib_local_v4(fib_trie: &str) -> Option<Vec<u32>> {
    let first = fib_trie.lines().find(|l| !l.trim().is_empty())?;
    if first.starts_with(char::is_whitespace) || !first.trim_end().ends_with(':') {
        return None;
    }
    let mut out = Vec::new();
    let mut last: Option<u32> = None;
    for line in fib_trie.lines() {
        let t = line.trim_start();
        if let Some(a) = t.strip_prefix("|-- ") {
            last = a.trim().parse::<std::net::Ipv4Addr>().ok().map(u32::from);
        } else if t.starts_with("/32 host LOCAL")
            && let Some(a) = last
            && !out.contains(&a)
        {
            out.push(a);
        }
    }
    Some(out)
}

/// IPv4 addresses on `iface`: local addresses that fall in one of its link (gateway-less) routes; loopback
/// addresses count for "lo".
pub fn v4_count(locals: &[u32], routes: &[Route4], iface: &str) -> usize {
    locals
        .iter()
        .filter(|&&a| {
            if a >> 24 == 127 {
                return iface == "lo";
            }
            routes.iter().any(|r| {
                r.iface == iface && r.gateway == 0 && r.mask != 0 && a & r.mask == r.dest & r.mask
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::route::v4_routes;

    const FIB: &str = include_str!("../../tests/fixtures/samples/fib_trie-firecracker-vm.txt");

    #[test]
    fn captured_if_inet6() {
        // fixtures/debian12-rt-qemu-isolated: only lo has an IPv6 address.
        let t = "00000000000000000000000000000001 01 80 10 80       lo\n";
        assert_eq!(v6_count(t, "lo"), Some(1));
        assert_eq!(v6_count(t, "enp0s2"), Some(0));
        assert_eq!(v6_count("zz\n", "lo"), None);
    }

    #[test]
    fn fib_trie_of_this_vm() {
        // Captured on the development VM: 127.0.0.1 and 192.0.2.2/24 on eth0, listed in Main and Local.
        let l = fib_local_v4(FIB).unwrap();
        assert_eq!(l.len(), 2, "{l:?}");
        let route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let r = v4_routes(route).unwrap();
        assert_eq!(v4_count(&l, &r, "eth0"), 1);
        assert_eq!(v4_count(&l, &r, "lo"), 1);
        assert_eq!(v4_count(&l, &r, "eth1"), 0);
        for bad in [
            "",
            "\n",
            "zz\u{1} q\n",
            "  |-- 10.0.0.1\n     /32 host LOCAL\n",
        ] {
            assert_eq!(fib_local_v4(bad), None, "{bad:?}");
        }
    }
}
