//! The EtherCAT NIC of the original tool: present, link up, quiet (no IP traffic). Its receive path (IRQs, RPS,
//! deferral) is in nic_irq.rs, its driver and speed in nic_hw.rs.

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, unknown};
use crate::host::Host;
use crate::machine::net::NET;
use crate::parse::{netaddr, route};

const ROUTE: &str = "/proc/net/route";
const IPV6_ROUTE: &str = "/proc/net/ipv6_route";
const IF_INET6: &str = "/proc/net/if_inet6";
const FIB_TRIE: &str = "/proc/net/fib_trie";

/// `--nic NAME` names an interface of this machine (the one check every command makes, with one message that
/// lists the interfaces there are).
pub(crate) fn require(host: &Host, name: &str) -> Result<(), crate::error::Error> {
    crate::sys::ifname::validate(name)?;
    let mut names = host.list(NET).unwrap_or_default();
    // Listed but unreadable is still an interface: nic_present then says what is wrong with it.
    if exists(host, name) || names.iter().any(|n| n == name) {
        return Ok(());
    }
    names.retain(|n| crate::sys::ifname::validate(n).is_ok());
    names.sort();
    let here = if names.is_empty() {
        "none found".to_string()
    } else {
        names.join(", ")
    };
    Err(crate::error::Error::usage(format!(
        "--nic {name}: no such network interface (interfaces here: {here})"
    )))
}

/// Whether the interface exists (any of the files the original looked at can be read).
pub(crate) fn exists(host: &Host, nic: &str) -> bool {
    ["operstate", "carrier", "address"]
        .iter()
        .any(|f| host.read(&format!("{NET}/{nic}/{f}")).is_ok())
}

/// The NIC this check is about, if it exists; otherwise the `unknown` verdict the dependent checks give.
pub(crate) fn present<'a>(host: &Host, ctx: &'a Ctx) -> Result<&'a str, Unknown> {
    let nic = ctx
        .nic
        .as_deref()
        .ok_or_else(|| unknown("no NIC in context"))?;
    if exists(host, nic) {
        Ok(nic)
    } else {
        Err(unknown("NIC not found"))
    }
}

pub(crate) const NIC_PRESENT: Check = Check {
    id: CheckId::NicPresent,
    section: Section::Nic,
    title: "NIC interface present",
    doc: "The interface given with --nic exists. Passes when its operstate, carrier or address can be read. \
          Improvement: a missing interface fails (the original said unknown and exited 0); the other NIC checks \
          are then unknown.",
    remedy: None,
    by_hand: Some("name an interface that exists (`ip -br link` lists them)"),
    evaluate: nic_present,
};

fn nic_present(host: &Host, ctx: &Ctx) -> Eval {
    match ctx.nic.as_deref() {
        None => Err(unknown("no NIC in context")),
        Some(n) if exists(host, n) => Ok(Assessment::pass("exists")),
        Some(_) => Ok(Assessment::fail("interface not found")),
    }
}

pub(crate) const NIC_LINK: Check = Check {
    id: CheckId::NicLink,
    section: Section::Nic,
    title: "NIC link is UP",
    doc: "Without a link to the first SubDevice no frame comes back. Passes when operstate is up; when operstate \
          is \"unknown\" (drivers that do not report it) the carrier decides.",
    remedy: None,
    by_hand: Some(
        "connect the cable to the first EtherCAT SubDevice and bring the interface up: `ip link set IFACE up`",
    ),
    evaluate: nic_link,
};

fn nic_link(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let oper = host
        .read_trimmed(&format!("{NET}/{nic}/operstate"))
        .unwrap_or_default();
    if oper == "up" {
        return Ok(Assessment::pass("operstate=up"));
    }
    if !oper.is_empty() && !super::is_word(&oper) {
        return Err(unknown(format!("operstate: unexpected value '{oper}'")));
    }
    if !oper.is_empty() && oper != "unknown" {
        return Ok(Assessment::fail(format!("operstate={oper}")));
    }
    match host
        .read_trimmed(&format!("{NET}/{nic}/carrier"))
        .as_deref()
    {
        Ok("1") => Ok(Assessment::pass("carrier=1")),
        Ok("0") => Ok(Assessment::fail("carrier=0")),
        _ => Err(unknown("no operstate/carrier")),
    }
}

pub(crate) const NIC_QUIET: Check = Check {
    id: CheckId::NicQuiet,
    section: Section::Nic,
    title: "NIC is quiet",
    doc: "An EtherCAT segment should carry only EtherCAT: an IPv4/IPv6 address (even link-local) or a default \
          route makes the kernel send ARP, neighbour discovery and other traffic on it. Passes when the interface \
          has no address and no default route. On a snapshot the addresses come from /proc/net/if_inet6 and \
          /proc/net/fib_trie instead of getifaddrs(). Unknown when /proc/net/route (or another of those files) \
          is missing, unreadable or not in the kernel's format: a table that cannot be read is not an empty one \
          (no ipv6_route or if_inet6 is a kernel without IPv6).",
    remedy: None,
    by_hand: Some(
        "take addresses and routes off the EtherCAT NIC: `ip addr flush dev IFACE`, and tell NetworkManager/systemd-networkd/ifupdown to leave it unmanaged (e.g. `nmcli device set IFACE managed no`)",
    ),
    evaluate: nic_quiet,
};

/// A routing or address file parsed: unreadable or not in the kernel's format is the check's unknown.
fn table<T, E: std::fmt::Display>(
    host: &Host,
    path: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<T, Unknown> {
    let text = host.read(path).map_err(|e| {
        if e.is_not_found() {
            super::absent(host, path)
        } else {
            unknown(format!("{path}: {}", e.reason()))
        }
    })?;
    parse(&text).map_err(|e| unknown(format!("{path}: {e}")))
}

fn addr_counts(host: &Host, nic: &str) -> Result<(usize, usize), Unknown> {
    // The files are read on the live machine too, so that a snapshot holds them.
    let from_files = (|| {
        let v6 = match host.read(IF_INET6) {
            Err(e) if e.is_not_found() && host.lacks(IF_INET6) => 0,
            _ => table(host, IF_INET6, |t| {
                netaddr::v6_count(t, nic).ok_or("not in the kernel's format")
            })?,
        };
        let locals = table(host, FIB_TRIE, |t| {
            netaddr::fib_local_v4(t).ok_or("no routing table in it")
        })?;
        let routes = table(host, ROUTE, route::v4_routes)?;
        Ok((netaddr::v4_count(&locals, &routes, nic), v6))
    })();
    match crate::machine::net::live_address_counts(host, nic) {
        Some(counts) => Ok(counts),
        None => from_files,
    }
}

fn nic_quiet(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let def4 = table(host, ROUTE, route::v4_default_ifaces)?
        .iter()
        .any(|i| i == nic);
    // No ipv6_route is a kernel without IPv6 (ipv6.disable=1): no IPv6 default route.
    let def6 = match host.read(IPV6_ROUTE) {
        Err(e) if e.is_not_found() && host.lacks(IPV6_ROUTE) => false,
        _ => table(host, IPV6_ROUTE, route::v6_default_ifaces)?
            .iter()
            .any(|i| i == nic),
    };
    let (v4, v6) = addr_counts(host, nic)?;
    Ok(if (v4, v6, def4, def6) == (0, 0, false, false) {
        Assessment::pass("no IPs, no default route")
    } else {
        Assessment::fail(noisy(v4, v6, def4, def6))
    })
}

/// "2 IPv4 addresses, 1 IPv6 address, the IPv4 default route": what makes the kernel talk on the segment.
fn noisy(v4: usize, v6: usize, def4: bool, def6: bool) -> String {
    let count = |n: usize, what: &str| match n {
        0 => None,
        1 => Some(format!("1 {what} address")),
        n => Some(format!("{n} {what} addresses")),
    };
    let route = |d: bool, what: &str| d.then(|| format!("the {what} default route"));
    [
        count(v4, "IPv4"),
        count(v6, "IPv6"),
        route(def4, "IPv4"),
        route(def6, "IPv6"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::{Assessment, finding};

    #[test]
    fn a_noisy_nic_says_what_it_carries_in_words() {
        assert_eq!(
            noisy(1, 2, true, false),
            "1 IPv4 address, 2 IPv6 addresses, the IPv4 default route"
        );
        assert_eq!(noisy(0, 0, false, true), "the IPv6 default route");
    }

    #[test]
    fn the_by_hand_remedy_names_the_interface_given() {
        let f = finding(&NIC_QUIET, Ok(Assessment::fail("1 IPv4 address"))).for_nic(Some("enp2s0"));
        let b = f.by_hand.unwrap();
        assert!(b.contains("`ip addr flush dev enp2s0`"), "{b}");
        assert!(!b.contains("IFACE"), "{b}");
    }
}
