//! "Why late": the interference counters and the trace's explanations under the final report.

use crate::measure::interference::cause::Act;
use crate::measure::interference::report::{Interference, Interferer, OtherCpu};
use crate::measure::interference::smi::Smi;
use crate::measure::result::RunResult;
use crate::trace::senders::{self, IpiSenders};
use crate::trace::session::TraceReport;

/// Sources listed per block; the rest are counted.
const SHOW: usize = 6;

pub(crate) fn render(r: &RunResult) -> String {
    let mut s = String::new();
    if let Some(i) = &r.interference {
        s.push_str(&counters(i));
    }
    if let Some(t) = &r.trace {
        if r.resets > 0 {
            // The trace follows the late cycles of the whole run: it is not restarted by a reset.
            s.push_str(
                "The trace below covers the whole run, from before the statistics were reset.\n",
            );
        }
        s.push_str(&trace(t));
    }
    s
}

fn source_line(x: &Interferer, cpu: usize) -> String {
    let ran = x
        .ran_ms
        .map(|m| format!(", ran {m:.2} ms"))
        .unwrap_or_default();
    let mut s = format!(
        "  {:<40} {:>8} ({}/s{ran}) → {}\n",
        crate::checks::sanitize(&x.describe(), 40),
        x.count,
        x.per_s,
        x.remedy.command(cpu)
    );
    // A remedy of nothing printed its why, which names the senders already.
    if let (Some(by), false) = (&x.sent_by, x.remedy.act == Act::None) {
        s.push_str(&format!("      {}\n", crate::checks::sanitize(by, 400)));
    }
    s
}

fn block(title: &str, sources: &[Interferer], cpu: usize) -> String {
    let mut s = format!("{title}\n");
    if sources.is_empty() {
        s.push_str("  nothing\n");
    }
    for x in sources.iter().take(SHOW) {
        s.push_str(&source_line(x, cpu));
    }
    if sources.len() > SHOW {
        s.push_str(&format!("  +{} more (in the JSON)\n", sources.len() - SHOW));
    }
    s
}

fn counters(i: &Interference) -> String {
    let mut s = format!(
        "\nOn CPU {} during the run ({} windows over {:.1} s; the RT thread was preempted {} times):\n",
        i.cpu, i.windows, i.seconds, i.rt_preempted
    );
    s.push_str(&block("", &i.sources, i.cpu)[1..]);
    if let Some(w) = &i.worst_window {
        let title = format!(
            "In the window of the worst wakeup ({:.0} µs, {:.0}–{:.0} s):",
            w.worst_wakeup_us.unwrap_or(0.0),
            w.start_s,
            w.start_s + w.seconds
        );
        s.push_str(&block(&title, &w.sources, i.cpu));
    }
    if !i.suspects.is_empty() {
        s.push_str("Suspects of the worst wakeup, from the counters:\n");
        for x in &i.suspects {
            s.push_str(&source_line(x, i.cpu));
        }
    }
    if let Some(smi) = &i.smi {
        s.push_str(&smi_line(smi));
    }
    if let Some(f) = &i.firmware {
        s.push_str(&format!(
            "Worst wakeup: {}\n",
            crate::checks::sanitize(f, 400)
        ));
    }
    let t = &i.ticks;
    s.push_str(&format!(
        "Ticks: {} local timer interrupts/s, {} of them the loop's own wakeups → {}\n",
        t.local_timer_per_s,
        t.loop_wakeups_per_s,
        crate::checks::sanitize(&t.verdict, 400)
    ));
    for o in &i.other_cpus {
        s.push_str(&other_cpu_line(o));
    }
    s
}

/// "  IPIs sent to CPU 1: 3 from python3 (pid 812) via generic_exec_single; …", one sender a line.
fn ipi_senders(i: &IpiSenders) -> String {
    let cpus = crate::parse::cpulist::format(&i.cpus);
    if !i.known() {
        return format!(
            "  IPIs sent to CPU {cpus}: {}\n",
            crate::checks::sanitize(&i.source, 200)
        );
    }
    let mut s = format!("  IPIs sent to CPU {cpus} during the run (ipi_send events):\n");
    if i.senders.is_empty() {
        s.push_str("    none\n");
    }
    for x in &i.senders {
        let line = crate::checks::sanitize(&senders::describe(x), 200);
        s.push_str(&format!("    {} {line}\n", x.row));
    }
    if i.others > 0 {
        s.push_str(&format!(
            "    +{} from other senders (in the JSON)\n",
            i.others
        ));
    }
    if i.dropped > 0 {
        s.push_str(&format!("    {} more the buffer dropped\n", i.dropped));
    }
    s
}

/// "IPIs on RT CPU 3 (the set's other threads): RES 2, CAL 0, TLB 0, IWI 0" — the rows as /proc/interrupts names
/// them, counted over the run.
fn other_cpu_line(o: &OtherCpu) -> String {
    let rows: Vec<String> = o
        .ipis
        .iter()
        .map(|(row, n)| format!("{} {n}", crate::checks::sanitize(row, 8)))
        .collect();
    let rows = match rows.is_empty() {
        true => "none counted".to_string(),
        false => rows.join(", "),
    };
    format!(
        "IPIs on RT CPU {} (the set's other threads) over the run: {rows}\n",
        o.cpu
    )
}

/// "SMIs: 3 on CPU 1, 3 on CPU 0 over the run" or why they were not counted.
fn smi_line(smi: &Smi) -> String {
    let how = crate::checks::sanitize(&smi.driver, 120);
    match (&smi.total, smi.on_rt_core()) {
        (Some(t), Some(_)) => {
            let per: Vec<String> = t
                .iter()
                .zip(&smi.cpus)
                .map(|(n, c)| format!("{n} on CPU {c}"))
                .collect();
            format!("SMIs (firmware): {} over the run ({how})\n", per.join(", "))
        }
        _ => format!(
            "SMIs (firmware): not counted — {} ({how})\n",
            crate::checks::sanitize(smi.not_counted.as_deref().unwrap_or("unknown why"), 300)
        ),
    }
}

fn trace(t: &TraceReport) -> String {
    let (scope, unit) = match &t.nic {
        Some(nic) => (
            format!("the receive path on {nic}, every CPU"),
            ("reply", "replies"),
        ),
        None => (format!("CPU {}", t.cpu), ("cycle", "cycles")),
    };
    let mut s = format!(
        "\nTrace of {scope} ({} {} marked{}{}):\n",
        t.marks,
        unit.1,
        t.break_us
            .map(|b| format!(", {} over {b} µs", t.over_break))
            .unwrap_or_default(),
        if t.lost_events > 0 {
            format!(", {} events lost", t.lost_events)
        } else {
            String::new()
        }
    );
    for e in &t.explained {
        s.push_str(&format!(
            "  {} {}: {}\n",
            unit.0,
            e.cycle,
            crate::checks::sanitize(&e.verdict, 400)
        ));
    }
    for e in &t.lost_frames {
        s.push_str(&format!("  {}\n", crate::checks::sanitize(&e.verdict, 400)));
    }
    if let Some(e) = t.explained.first() {
        s.push_str(&format!(
            "  timeline of {} {} (µs from the {}):\n",
            unit.0,
            e.cycle,
            if t.nic.is_some() { "send" } else { "deadline" }
        ));
        for st in e.timeline.iter().filter(|st| st.at_us >= -200.0) {
            s.push_str(&format!(
                "    {:>9.1}  {}\n",
                st.at_us,
                crate::checks::sanitize(&st.what, 120)
            ));
        }
    }
    if t.explained.is_empty() {
        s.push_str(&format!("  no late {} was kept\n", unit.0));
    }
    if let Some(i) = &t.ipi_senders {
        s.push_str(&ipi_senders(i));
    }
    if let Some(f) = &t.file {
        s.push_str(&format!("  raw trace: {f}\n"));
    }
    s
}
