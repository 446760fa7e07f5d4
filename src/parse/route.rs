//! Routing tables: /proc/net/route (IPv4, hex little-endian fields) and /proc/net/ipv6_route (hex, device last).

/// Interfaces that have an IPv4 default route (destination 0, mask 0) in /proc/net/route.
pub fn v4_default_ifaces(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (iface, dest, mask) = (w.first()?, w.get(1)?, w.get(7)?);
            (*dest == "00000000" && *mask == "00000000").then(|| iface.to_string())
        })
        .collect()
}

/// An IPv4 route: interface, destination, mask, whether it has a gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route4 {
    pub(crate) iface: String,
    pub(crate) dest: u32,
    pub(crate) mask: u32,
    pub(crate) gateway: u32,
}

/// Every parseable IPv4 route (addresses in host order).
pub fn v4_routes(text: &str) -> Vec<Route4> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some(Route4 {
                iface: w.first()?.to_string(),
                // The kernel prints the in-memory (network order) u32 with %08X; on a little-endian machine
                // 10.0.2.0 appears as "0002000A". Reading it as a number and swapping gives host order there.
                dest: hex(w.get(1)?)?.swap_bytes(),
                gateway: hex(w.get(2)?)?.swap_bytes(),
                mask: hex(w.get(7)?)?.swap_bytes(),
            })
        })
        .collect()
}

/// Interfaces that have an IPv6 default route (::/0) in /proc/net/ipv6_route, loopback's unreachable
/// placeholder excluded (flags 0x00200200 = RTF_REJECT|RTF_NONEXTHOP).
pub fn v6_default_ifaces(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 10 {
                return None;
            }
            let zero = w[0].len() == 32 && w[0].bytes().all(|b| b == b'0');
            let flags = u32::from_str_radix(w[8], 16).ok()?;
            const RTF_REJECT: u32 = 0x0200;
            (zero && w[1] == "00" && flags & RTF_REJECT == 0).then(|| w[9].to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_guest_has_no_default() {
        // fixtures/debian12-rt-qemu-isolated: header only in route; ipv6_route has lo's reject entries.
        let r =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
        assert!(v4_default_ifaces(r).is_empty());
        let v6 = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n";
        assert!(v6_default_ifaces(v6).is_empty());
    }

    #[test]
    fn default_routes() {
        // A desktop on DHCP (10.0.2.0/24 via eth0, gateway 10.0.2.2) and an RA-learned IPv6 default.
        let r = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t0202000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\neth0\t0002000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(v4_default_ifaces(r), vec!["eth0"]);
        let routes = v4_routes(r);
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
        assert_eq!(v6_default_ifaces(v6), vec!["enp2s0"]);
    }
}
