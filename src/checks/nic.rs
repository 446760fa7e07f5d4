//! The EtherCAT NIC of the original tool: present, link up, quiet (no IP traffic), IRQs pinned, RPS off.

use super::irq::{irq_affinity, nic_irqs, read_interrupts};
use super::{Check, Ctx, Section, Verdict, settle};
use crate::host::Host;
use crate::parse::{mask, netaddr, route};
use crate::remedy;

pub const NET: &str = "/sys/class/net";
const ROUTE: &str = "/proc/net/route";
const IPV6_ROUTE: &str = "/proc/net/ipv6_route";
const IF_INET6: &str = "/proc/net/if_inet6";
const FIB_TRIE: &str = "/proc/net/fib_trie";

/// Whether the interface exists (any of the files the original looked at can be read).
pub fn exists(host: &Host, nic: &str) -> bool {
    ["operstate", "carrier", "address"]
        .iter()
        .any(|f| host.read(&format!("{NET}/{nic}/{f}")).is_ok())
}

/// The NIC this check is about, if it exists; otherwise the `unknown` verdict the dependent checks give.
pub fn present<'a>(host: &Host, ctx: &'a Ctx) -> Result<&'a str, Verdict> {
    let nic = ctx
        .nic
        .as_deref()
        .ok_or_else(|| Verdict::unknown("no NIC in context"))?;
    if exists(host, nic) {
        Ok(nic)
    } else {
        Err(Verdict::unknown("NIC not found"))
    }
}

pub const NIC_PRESENT: Check = Check {
    id: "nic_present",
    section: Section::Nic,
    title: "NIC interface present",
    doc: "The interface given with --nic exists. Passes when its operstate, carrier or address can be read. \
          Improvement: a missing interface fails (the original said unknown and exited 0); the other NIC checks \
          are then unknown.",
    remedy: None,
    evaluate: nic_present,
};

fn nic_present(host: &Host, ctx: &Ctx) -> Verdict {
    match ctx.nic.as_deref() {
        None => Verdict::unknown("no NIC in context"),
        Some(n) if exists(host, n) => Verdict::pass("exists"),
        Some(_) => Verdict::fail("interface not found"),
    }
}

pub const NIC_LINK: Check = Check {
    id: "nic_link",
    section: Section::Nic,
    title: "NIC link is UP",
    doc: "Without a link to the first SubDevice no frame comes back. Passes when operstate is up; when operstate \
          is \"unknown\" (drivers that do not report it) the carrier decides.",
    remedy: None,
    evaluate: nic_link,
};

fn nic_link(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let oper = host
            .read_trimmed(&format!("{NET}/{nic}/operstate"))
            .unwrap_or_default();
        if oper == "up" {
            return Ok(Verdict::pass("operstate=up"));
        }
        if !oper.is_empty() && !super::is_word(&oper) {
            return Ok(Verdict::unknown(format!(
                "operstate: unexpected value '{oper}'"
            )));
        }
        if !oper.is_empty() && oper != "unknown" {
            return Ok(Verdict::fail(format!("operstate={oper}")));
        }
        Ok(
            match host
                .read_trimmed(&format!("{NET}/{nic}/carrier"))
                .as_deref()
            {
                Ok("1") => Verdict::pass("carrier=1"),
                Ok("0") => Verdict::fail("carrier=0"),
                _ => Verdict::unknown("no operstate/carrier"),
            },
        )
    })())
}

pub const NIC_QUIET: Check = Check {
    id: "nic_quiet",
    section: Section::Nic,
    title: "NIC is quiet",
    doc: "An EtherCAT segment should carry only EtherCAT: an IPv4/IPv6 address (even link-local) or a default \
          route makes the kernel send ARP, neighbour discovery and other traffic on it. Passes when the interface \
          has no address and no default route. On a snapshot the addresses come from /proc/net/if_inet6 and \
          /proc/net/fib_trie instead of getifaddrs().",
    remedy: None,
    evaluate: nic_quiet,
};

fn addr_counts(host: &Host, nic: &str) -> Option<(usize, usize)> {
    // The files are read on the live machine too, so that a snapshot holds them.
    let from_files = (|| {
        let v6 = netaddr::v6_count(&host.read(IF_INET6).ok()?, nic)?;
        let locals = netaddr::fib_local_v4(&host.read(FIB_TRIE).ok()?);
        let routes = route::v4_routes(&host.read(ROUTE).unwrap_or_default());
        Some((netaddr::v4_count(&locals, &routes, nic), v6))
    })();
    if host.is_live()
        && let Ok(addrs) = nix::ifaddrs::getifaddrs()
    {
        let (mut v4, mut v6) = (0, 0);
        for a in addrs.filter(|a| a.interface_name == nic) {
            match a
                .address
                .as_ref()
                .and_then(nix::sys::socket::SockaddrLike::family)
            {
                Some(nix::sys::socket::AddressFamily::Inet) => v4 += 1,
                Some(nix::sys::socket::AddressFamily::Inet6) => v6 += 1,
                _ => {}
            }
        }
        return Some((v4, v6));
    }
    from_files
}

fn nic_quiet(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let def4 = route::v4_default_ifaces(&host.read(ROUTE).unwrap_or_default())
            .iter()
            .any(|i| i == nic);
        let def6 = route::v6_default_ifaces(&host.read(IPV6_ROUTE).unwrap_or_default())
            .iter()
            .any(|i| i == nic);
        let yn = |b: bool| if b { "yes" } else { "no" };
        Ok(match addr_counts(host, nic) {
            Some((0, 0)) if !def4 && !def6 => Verdict::pass("no IPs, no default route"),
            Some((v4, v6)) => Verdict::fail(format!(
                "v4={v4}, v6={v6}, def4={}, def6={}",
                yn(def4),
                yn(def6)
            )),
            None => Verdict::unknown(format!("addr=?, def4={}, def6={}", yn(def4), yn(def6))),
        })
    })())
}

pub const NIC_IRQS_PINNED: Check = Check {
    id: "nic_irqs_pinned",
    section: Section::Nic,
    title: "NIC IRQs pinned to RT core",
    doc: "The NIC's interrupts should be handled on the RT core, next to the thread that waits for the frames. \
          Passes when every IRQ of the NIC has exactly the RT core as its affinity. The NIC's IRQs are found by \
          its MSI vectors and exact action names (see unrelated_irqs).",
    remedy: Some(remedy::IRQ_AFFINITY),
    evaluate: nic_irqs_pinned,
};

fn nic_irqs_pinned(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let ints = read_interrupts(host)?;
        let irqs = nic_irqs(host, nic, &ints);
        if irqs.is_empty() {
            return Ok(Verdict::unknown("no NIC IRQs seen"));
        }
        let mut bad = Vec::new();
        for n in &irqs {
            let path = format!("{}/{n}/smp_affinity_list", super::irq::PROC_IRQ);
            let raw = host.read_trimmed(&path).map_err(|e| {
                Verdict::unknown(format!(
                    "cannot read smp_affinity_list for IRQ {n}: {}",
                    e.reason()
                ))
            })?;
            let set = crate::parse::cpulist::parse(&raw).unwrap_or_default();
            let now = irq_affinity(host, *n).unwrap_or_default();
            if set != [ctx.core] || (!now.is_empty() && now != [ctx.core]) {
                bad.push(n.to_string());
            }
        }
        Ok(if bad.is_empty() {
            Verdict::pass(format!("all pinned to CPU{}", ctx.core))
        } else {
            Verdict::fail(format!("not pinned: {}", bad.join(",")))
        })
    })())
}

pub const RPS: Check = Check {
    id: "rps",
    section: Section::Nic,
    title: "RPS disabled on NIC",
    doc: "Receive Packet Steering hands received frames to other CPUs through an IPI, adding a hop and jitter. \
          Passes when every rx queue's rps_cpus mask is zero.",
    remedy: Some(remedy::RPS),
    evaluate: rps,
};

fn rps(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let dir = format!("{NET}/{nic}/queues");
        let queues = host
            .list(&dir)
            .map_err(|_| Verdict::unknown("no queues dir"))?;
        let mut checked = 0;
        let mut bad = Vec::new();
        for q in queues.iter().filter(|q| q.starts_with("rx-")) {
            let path = format!("{dir}/{q}/rps_cpus");
            let raw = host
                .read_trimmed(&path)
                .map_err(|e| Verdict::unknown(format!("cannot read {path}: {}", e.reason())))?;
            let cpus =
                mask::parse(&raw).map_err(|_| Verdict::unknown(format!("{path}: not a mask")))?;
            checked += 1;
            if !cpus.is_empty() {
                bad.push(q.clone());
            }
        }
        Ok(if checked == 0 {
            Verdict::unknown("no rx/tx queues found")
        } else if bad.is_empty() {
            Verdict::pass("all zero masks")
        } else {
            Verdict::fail(format!("non-zero masks present ({})", bad.join(",")))
        })
    })())
}
