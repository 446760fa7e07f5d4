//! The NIC's receive path: the checks that receive packet steering is off and that received frames are not held
//! back (IRQ deferral), and the step that zeroes both. They are the NIC's values, lost at reboot and when the
//! interface goes: apply-saved sets them again at boot and when the saved NIC appears.

use super::{Persistence, Tunable};
use crate::checks::nic::present;
use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;
use crate::machine::net::NET;
use crate::parse::kint::{self, Range};
use crate::parse::mask;

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Rps,
    persistence: Persistence::Nic { each_nic: None },
    plan: |host, t, _| Ok(plan(host, t)),
    risks,
};

fn risks(_: &Step, _: &Target) -> Vec<String> {
    vec![
        "received packets are processed only on the CPU that takes the NIC's interrupt: less throughput for \
         other traffic on that NIC"
            .into(),
    ]
}

pub(crate) const RPS: Check = Check {
    id: CheckId::Rps,
    section: Section::Nic,
    title: "RPS disabled on NIC",
    doc: "Receive Packet Steering hands received frames to other CPUs through an IPI, adding a hop and jitter. \
          Passes when every rx queue's rps_cpus mask is zero.",
    remedy: Some(StepId::Rps),
    by_hand: None,
    evaluate: rps,
};

fn rps(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let dir = format!("{NET}/{nic}/queues");
    let queues = host.list(&dir).map_err(|_| unknown("no queues dir"))?;
    let mut checked = 0;
    let mut bad = Vec::new();
    for q in queues.iter().filter(|q| q.starts_with("rx-")) {
        let path = format!("{dir}/{q}/rps_cpus");
        let raw = host
            .read_trimmed(&path)
            .map_err(|e| unknown(format!("cannot read {path}: {}", e.reason())))?;
        let cpus = mask::parse(&raw).map_err(|_| unknown(format!("{path}: not a mask")))?;
        checked += 1;
        if !cpus.is_empty() {
            bad.push(q.clone());
        }
    }
    if checked == 0 {
        return Err(unknown("no rx/tx queues found"));
    }
    Ok(if bad.is_empty() {
        Assessment::pass("all zero masks")
    } else {
        Assessment::fail(format!("non-zero masks present ({})", bad.join(",")))
    })
}

pub(crate) const NIC_IRQ_DEFER: Check = Check {
    id: CheckId::NicIrqDefer,
    section: Section::Nic,
    title: "NIC IRQ deferral off",
    doc: "napi_defer_hard_irqs and gro_flush_timeout hold received frames back to batch them: good for \
          throughput, a delay for every EtherCAT reply. Passes when both are 0.",
    remedy: Some(StepId::Rps),
    by_hand: None,
    evaluate: nic_irq_defer,
};

fn nic_irq_defer(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    // napi_defer_hard_irqs is "%u" (at most S32_MAX), gro_flush_timeout "%lu" nanoseconds.
    let num = |f: &str, r: &Range| -> Result<u64, crate::checks::Unknown> {
        let path = format!("{NET}/{nic}/{f}");
        let v = crate::checks::read(host, &path)?;
        kint::uint(&v, r)
            .map_err(|e| unknown(format!("{f}: '{}' {e}", crate::checks::sanitize(&v, 24))))
    };
    let defer = num("napi_defer_hard_irqs", &Range::new(0..=i32::MAX as i64))?;
    let gro = num("gro_flush_timeout", &Range::U64)?;
    let d = format!("napi_defer_hard_irqs={defer}, gro_flush_timeout={gro}");
    Ok(if defer == 0 && gro == 0 {
        Assessment::pass(d)
    } else {
        Assessment::fail(d)
    })
}

pub fn plan(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::Rps,
        "NIC receive path: RPS off, no IRQ deferral",
        "receive packet steering hands packets to other CPUs through IPIs; napi_defer_hard_irqs and \
         gro_flush_timeout hold received frames back to batch them",
    );
    let Some(nic) = &t.nic else {
        s.note("no --nic given: nothing to do");
        return s;
    };
    let dir = format!("{NET}/{nic}/queues");
    for q in host
        .list(&dir)
        .unwrap_or_default()
        .iter()
        .filter(|q| q.starts_with("rx-"))
    {
        value(
            &mut s,
            host,
            &format!("{dir}/{q}/rps_cpus"),
            "0",
            ValueKind::HexMask,
            false,
        );
    }
    for knob in ["napi_defer_hard_irqs", "gro_flush_timeout"] {
        let path = format!("{NET}/{nic}/{knob}");
        if host.exists(&path) {
            value(&mut s, host, &path, "0", ValueKind::Exact, false);
        }
    }
    s
}
