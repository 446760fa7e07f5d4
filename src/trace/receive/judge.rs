//! NIC mode: a reply's receive path (receive.rs found its events) judged — the culprits with their remedies
//! (work on the RT CPUs is interference, on the other CPUs it is where it belongs), the round trip cut into
//! phases each with the fix step that would shorten it, and the verdict naming the largest.

use crate::measure::interference::cause::{self, Remedy};
use crate::trace::model::{Culprit, Kind, ReceivePath, RoundTripPhase};

/// `wait`: what held the receiver's CPU from its wakeup to running, largest first; `marker_us`: the receiver's
/// marker, µs after the send. Fills `path.phases`; returns all culprits (largest first) and the verdict.
pub(crate) fn judge(
    path: &mut ReceivePath,
    wait: Vec<Culprit>,
    rt_cpus: &[usize],
    marker_us: f64,
    frame: u64,
    rtt_ns: u64,
) -> (Vec<Culprit>, String) {
    let top_wait = wait.first().cloned();
    let mut culprits = wait;
    let on_rt = |c: usize| rt_cpus.contains(&c);
    let housekeeping = || Remedy::none("on a housekeeping CPU: where it belongs");
    if let Some(i) = &path.irq {
        culprits.push(Culprit {
            kind: Kind::Irq,
            name: i.name.clone(),
            id: i.id,
            prio: None,
            ran_us: i.ran_us.unwrap_or(0.0),
            remedy: if on_rt(i.cpu) {
                cause::for_irq()
            } else {
                housekeeping()
            },
            cpu: Some(i.cpu),
        });
    }
    let rx_remedy = path.net_rx.as_ref().map(|r| {
        if on_rt(r.cpu) {
            cause::for_softirq("NET_RX")
        } else if r.name.starts_with("ksoftirqd/") {
            cause::for_task(&r.name)
        } else {
            housekeeping()
        }
    });
    if let (Some(r), Some(rem)) = (&path.net_rx, &rx_remedy) {
        culprits.push(Culprit {
            kind: Kind::Softirq,
            name: "NET_RX".into(),
            id: None,
            prio: None,
            ran_us: r.ran_us.unwrap_or(0.0),
            remedy: rem.clone(),
            cpu: Some(r.cpu),
        });
    }
    culprits.sort_by(|a, b| b.ran_us.total_cmp(&a.ran_us));
    // The phases, where both ends are in the trace.
    let arrival = [&path.irq, &path.netif_rx, &path.net_rx, &path.received]
        .into_iter()
        .flatten()
        .map(|e| e.at_us)
        .next();
    let (woken_us, running_us) = (
        path.woken.as_ref().map(|e| e.at_us),
        path.running.as_ref().map(|e| e.at_us),
    );
    let mut phase = |name: &str, a: Option<f64>, b: Option<f64>, remedy: Remedy| {
        if let (Some(a), Some(b)) = (a, b) {
            path.phases.push(RoundTripPhase {
                name: name.into(),
                us: (b - a).max(0.0),
                remedy,
            });
        }
    };
    phase(
        "wire_and_peer",
        Some(0.0),
        arrival,
        match path.irq {
            Some(_) => cause::for_coalescing(),
            None => Remedy::none(
                "the wire and the peer's turnaround (the SubDevice, or rmp-eval reflect)",
            ),
        },
    );
    phase(
        "kernel_receive",
        arrival,
        woken_us,
        rx_remedy.unwrap_or_else(|| Remedy::none("the kernel's receive path")),
    );
    phase(
        "wakeup",
        woken_us,
        running_us,
        top_wait.as_ref().map_or_else(
            || Remedy::none("the wakeup itself (an IPI when it crosses CPUs)"),
            |c| c.remedy.clone(),
        ),
    );
    phase(
        "receiver",
        running_us,
        Some(marker_us),
        Remedy::none("the receiver's own work"),
    );
    let core = rt_cpus.first().copied().unwrap_or(0);
    let verdict = verdict(path, top_wait.as_ref(), frame, rtt_ns as f64 / 1000.0, core);
    (culprits, verdict)
}

/// "reply to frame 812 after 640 µs: most of it (512 µs) waiting for CPU 1 after the wakeup — … → remedy; …".
fn verdict(
    p: &ReceivePath,
    top_wait: Option<&Culprit>,
    frame: u64,
    rtt: f64,
    core: usize,
) -> String {
    if p.woken.is_none() {
        return format!(
            "reply to frame {frame} after {rtt:.0} µs: it was already queued — the receiver did not sleep since \
             the previous reply (busy with earlier ones); see the first late reply before it"
        );
    }
    let Some(big) = p.phases.iter().max_by(|a, b| a.us.total_cmp(&b.us)) else {
        return format!(
            "reply to frame {frame} after {rtt:.0} µs: its receive path on {} is not in the trace (events lost?)",
            p.nic
        );
    };
    let what = match big.name.as_str() {
        "wire_and_peer" => "on the wire and in the peer (send → first receive event)",
        "kernel_receive" => {
            "in the kernel's receive path (first receive event → the receiver woken)"
        }
        "wakeup" => "waiting for the receiver's CPU after the wakeup",
        _ => "in the receiver itself",
    };
    let who = match big.name.as_str() {
        "wakeup" => top_wait
            .map(|c| {
                format!(
                    ": {} ran {:.0} µs on CPU {}",
                    c.describe(),
                    c.ran_us,
                    c.cpu.unwrap_or(core)
                )
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let fix = match big.remedy.act {
        cause::Act::None => format!(" ({})", big.remedy.why),
        _ => format!(" → {}", big.remedy.command(core)),
    };
    let irq = p.irq.as_ref().map_or_else(
        || "no NIC IRQ (a veth, or the IRQ is outside the window)".to_string(),
        |i| {
            let (what, whose) = match p.irq_of_nic {
                Some(false) => ("IRQ", format!(", not one of {}'s (by /sys)", p.nic)),
                _ => ("NIC IRQ", String::new()),
            };
            format!(
                "{what} {} ({}) on CPU {}{whose}",
                i.id.unwrap_or(0),
                i.name,
                i.cpu
            )
        },
    );
    let rx = p.net_rx.as_ref().map_or_else(String::new, |r| {
        format!(
            "; NET_RX on CPU {} ({:.0} µs, in {})",
            r.cpu,
            r.ran_us.unwrap_or(0.0),
            r.name
        )
    });
    let wake = match (&p.woken, &p.running) {
        (Some(w), Some(r)) => format!(
            "; receiver woken from CPU {} by {}, ran on CPU {} {:.0} µs later",
            w.cpu,
            w.name,
            r.cpu,
            r.at_us - w.at_us
        ),
        _ => String::new(),
    };
    format!(
        "reply to frame {frame} after {rtt:.0} µs: {:.0} µs {what}{who}{fix}; {irq}{rx}{wake}",
        big.us
    )
}
