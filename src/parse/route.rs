//! Routing tables: /proc/net/route (IPv4, hex little-endian fields) and /proc/net/ipv6_route (hex, device last).

/// Why a routing table is not one the kernel printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("no \"Iface Destination …\" header (the kernel always prints it, even with no routes)")]
    NoHeader,
    #[error("line {0} is not a route")]
    BadLine(usize),
}

/// Interfaces that have an IPv4 default route (destination 0, mask 0) in /proc/net/route.
pub fn v4_default_ifaces(text: &str) -> Result<Vec<String>, RouteError> {
    Ok(v4_routes(text)?
        .into_iter()
        .filter(|r| r.dest == 0 && r.mask == 0)
        .map(|r| r.iface)
        .collect())
}

/// An IPv4 route: interface, destination, mask, whether it has a gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route4 {
    pub(crate) iface: String,
    pub(crate) dest: u32,
    pub(crate) mask: u32,
    pub(crate) gateway: u32,
}

/// Every IPv4 route (addresses in host order). The header is required and every other line must be a route
/// (interface, then hexadecimal destination, gateway … mask): an empty or garbled file is not "no routes".
pub fn v4_routes(text: &str) -> Result<Vec<Route4>, RouteError> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    if header.first() != Some(&"Iface") || header.get(1) != Some(&"Destination") {
        return Err(RouteError::NoHeader);
    }
    let mut out = Vec::new();
    for (i, l) in lines.enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let route = (|| {
            Some(Route4 {
                iface: w.first()?.to_string(),
                // The kernel prints the in-memory (network order) u32 with %08X; on a little-endian machine
                // 10.0.2.0 appears as "0002000A". Reading it as a number and swapping gives host order there.
                dest: hex(w.get(1)?)?.swap_bytes(),
                gateway: hex(w.get(2)?)?.swap_bytes(),
                mask: hex(w.get(7)?)?.swap_bytes(),
            })
        })();
        out.push(route.ok_or(RouteError::BadLine(i + 2))?);
    }
    Ok(out)
}

/// Interfaces that have an IPv6 default route (::/0) in /proc/net/ipv6_route, loopback's unreachable
/// placeholder excluded (flags 0x00200200 = RTF_REJECT|RTF_NONEXTHOP). The file has no header; a line that is
/// not ten fields with a 32-digit destination and hexadecimal flags is an error.
pub fn v6_default_ifaces(text: &str) -> Result<Vec<String>, RouteError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let bad = RouteError::BadLine(i + 1);
        if w.len() < 10 || w[0].len() != 32 || !w[0].bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad);
        }
        let flags = u32::from_str_radix(w[8], 16).map_err(|_| bad)?;
        let zero = w[0].bytes().all(|b| b == b'0');
        const RTF_REJECT: u32 = 0x0200;
        if zero && w[1] == "00" && flags & RTF_REJECT == 0 {
            out.push(w[9].to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_guest_has_no_default() {
        // fixtures/debian12-rt-qemu-isolated: header only in route; ipv6_route has lo's reject entries.
        let r =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
        assert!(v4_default_ifaces(r).unwrap().is_empty());
        let v6 = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n";
        assert!(v6_default_ifaces(v6).unwrap().is_empty());
    }

    #[test]
    fn default_routes() {
        // A desktop on DHCP (10.0.2.0/24 via eth0, gateway 10.0.2.2) and an RA-learned IPv6 default.
        let r = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t0202000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\neth0\t0002000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(v4_default_ifaces(r).unwrap(), vec!["eth0"]);
        let routes = v4_routes(r).unwrap();
        assert_eq!(
            routes[1].dest,
            u32::from(std::net::Ipv4Addr::new(10, 0, 2, 0))
        );
        assert_eq!(routes[1].mask, 0xffff_ff00);
        assert_eq!(
            routes[0].gateway,
            u32::from(std::net::Ipv4Addr::new(10, 0, 2, 2))
        );
        let v6 = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00450003   enp2s0\n";
        assert_eq!(v6_default_ifaces(v6).unwrap(), vec!["enp2s0"]);
    }

    #[test]
    fn empty_or_garbled_tables_are_errors_not_no_routes() {
        let header =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
        for bad in ["", "\n", "zz\u{1} q\n", "\u{0}\u{1}\u{2}"] {
            assert_eq!(v4_routes(bad), Err(RouteError::NoHeader), "{bad:?}");
            assert!(v4_default_ifaces(bad).is_err());
        }
        assert_eq!(
            v4_routes(&format!("{header}eth0\tzz\n")),
            Err(RouteError::BadLine(2))
        );
        // ipv6_route has no header: empty is no routes, a garbled line is not.
        assert_eq!(v6_default_ifaces(""), Ok(vec![]));
        assert_eq!(
            v6_default_ifaces("zz\u{1} q\n"),
            Err(RouteError::BadLine(1))
        );
    }
}
