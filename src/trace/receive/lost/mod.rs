//! NIC mode: a request that got no reply, from the trace around it. The sender marks each frame just before
//! send() ("rmp-eval s=FRAME"); after that marker, the sender thread's net_dev_xmit on the NIC is the frame leaving
//! (rc: what the driver said); until the reply to a later frame is marked, the frames arriving on the NIC are
//! counted against the replies marked. What the trace cannot tell is said: it ends at this machine's NIC driver.

use crate::measure::interference::cause::Remedy;
use crate::parse::ftrace::{self, Line};
use crate::trace::model::{Explanation, LostFrame, PathEvent, Step, mark};

/// "rmp-eval s=FRAME": the sender's marker.
fn send_mark(l: &Line) -> Option<u64> {
    if l.event != "tracing_mark_write" {
        return None;
    }
    l.body.strip_prefix("rmp-eval s=")?.trim().parse().ok()
}

fn on(l: &Line, events: &[&str], nic: &str) -> bool {
    events.contains(&l.event) && ftrace::get(&ftrace::fields(l.body), "dev") == Some(nic)
}

/// The frame leaving: the sender's transmit after its marker `si`, before its next one; and the driver's rc.
fn transmit(
    lines: &[Line],
    sends: &[(usize, u64)],
    si: usize,
    nic: &str,
) -> (Option<usize>, Option<i64>) {
    let sl = &lines[si];
    let next = sends
        .iter()
        .find(|(i, _)| *i > si)
        .map_or(lines.len(), |(i, _)| *i);
    let xi =
        (si + 1..next).find(|&i| lines[i].pid == sl.pid && on(&lines[i], &["net_dev_xmit"], nic));
    let rc = xi.and_then(|i| {
        ftrace::get(&ftrace::fields(lines[i].body), "rc").and_then(|v| v.parse::<i64>().ok())
    });
    (xi, rc)
}

/// What arrived on the NIC after the send, up to the line `until` (the reply to a later frame, or the end).
struct Watch {
    until: usize,
    kind: &'static str,
    arrivals: Vec<usize>,
    replies: usize,
}

/// Its reply would have come before the reply to a later frame (replies come back in order): up to that
/// marker, every frame arriving on the NIC (netif_receive_skb, or netif_rx where the first is not traced) is
/// set against the replies marked; more arrivals than replies is something that came back unmatched.
fn watch(lines: &[Line], from: usize, frame: u64, nic: &str) -> Watch {
    let until = (from + 1..lines.len())
        .find(|&i| mark(&lines[i]).is_some_and(|m| m.cycle > frame))
        .unwrap_or(lines.len());
    let kind = if lines.iter().any(|l| on(l, &["netif_receive_skb"], nic)) {
        "netif_receive_skb"
    } else {
        "netif_rx"
    };
    let arrivals: Vec<usize> = (from + 1..until)
        .filter(|&i| on(&lines[i], &[kind], nic))
        .collect();
    let replies = (from + 1..(until + 1).min(lines.len()))
        .filter(|&i| mark(&lines[i]).is_some())
        .count();
    Watch {
        until,
        kind,
        arrivals,
        replies,
    }
}

/// The verdict for `frame` from what the trace showed of its send and what came back.
fn verdict(
    frame: u64,
    nic: &str,
    sent: &Option<PathEvent>,
    rc: i64,
    arrived: &Option<PathEvent>,
    horizon: &str,
    counted: &str,
) -> String {
    match (sent, rc, arrived) {
        (None, _, _) => format!(
            "frame {frame}: no reply — the trace shows no transmit of it on {nic} (net_dev_xmit by the sender \
             before its next frame): it may not have reached the driver"
        ),
        (Some(s), rc, _) if rc != 0 => format!(
            "frame {frame}: no reply — the driver refused it (net_dev_xmit rc={rc} on CPU {}, {:.0} µs after the \
             send)",
            s.cpu, s.at_us
        ),
        (Some(s), _, None) => format!(
            "frame {frame}: no reply — it left (net_dev_xmit on {nic}, CPU {}, {:.0} µs after the send) and nothing \
             came back for it {horizon} ({counted}): lost on the wire or by the peer (this machine's trace sees no \
             further)",
            s.cpu, s.at_us
        ),
        (Some(s), _, Some(_)) => format!(
            "frame {frame}: no reply — it left (net_dev_xmit on {nic}, CPU {}, {:.0} µs after the send); {horizon} \
             {counted}: something came back that was not a valid reply to it (a malformed or foreign frame, or \
             the reply itself rejected)",
            s.cpu, s.at_us
        ),
    }
}

/// Explains frame `first` from `text` (all CPUs); with `tail` (the trace after the last reply), the first frame
/// ≥ `first` whose send is there. None: no such send in the trace (a gap's frame is then said to be unseen).
pub fn explain(text: &str, nic: &str, first: u64, tail: bool) -> Option<Explanation> {
    let mut lines: Vec<Line> = text.lines().filter_map(ftrace::parse_line).collect();
    lines.sort_by_key(|l| l.ts_ns);
    let sends: Vec<(usize, u64)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| send_mark(l).map(|f| (i, f)))
        .collect();
    let &(si, frame) = sends
        .iter()
        .find(|(_, f)| if tail { *f >= first } else { *f == first })?;
    let sl = &lines[si];
    let d = sl.ts_ns;
    let rel = |l: &Line| (l.ts_ns as f64 - d as f64) / 1000.0;
    let ev = |l: &Line, name: String| PathEvent {
        cpu: l.cpu,
        at_us: rel(l),
        ran_us: None,
        name,
        id: None,
    };
    let (xi, rc) = transmit(&lines, &sends, si, nic);
    let Watch {
        until,
        kind,
        arrivals,
        replies,
    } = watch(&lines, xi.unwrap_or(si), frame, nic);
    let horizon = match lines.get(until) {
        Some(l) => format!(
            "until the reply to frame {} was marked ({:.0} µs after the send)",
            mark(l).map_or(0, |m| m.cycle),
            rel(l)
        ),
        None => format!(
            "until the trace ends ({:.0} µs after the send)",
            lines.last().map_or(0.0, &rel)
        ),
    };
    let watched_us = lines.get(until).or(lines.last()).map_or(0.0, rel);
    let mut timeline = vec![Step {
        at_us: 0.0,
        what: format!(
            "CPU {}: {} marks frame {frame} before send()",
            sl.cpu, sl.comm
        ),
    }];
    let sent = xi.map(|i| ev(&lines[i], format!("net_dev_xmit rc={}", rc.unwrap_or(0))));
    let arrived = (arrivals.len() > replies).then(|| ev(&lines[arrivals[0]], kind.to_string()));
    for (e, what) in [
        (&sent, "leaves"),
        (&arrived, "arrival not matched to a reply"),
    ] {
        if let Some(e) = e {
            timeline.push(Step {
                at_us: e.at_us,
                what: format!("CPU {}: {} on {nic} ({what})", e.cpu, e.name),
            });
        }
    }
    let counted = format!(
        "{} frame(s) arrived on {nic} and {replies} reply(ies) were matched",
        arrivals.len()
    );
    let verdict = verdict(
        frame,
        nic,
        &sent,
        rc.unwrap_or(0),
        &arrived,
        &horizon,
        &counted,
    );
    Some(Explanation {
        cycle: frame,
        late_us: 0.0,
        cpu: sl.cpu,
        timer_us: None,
        woken_us: None,
        running_us: None,
        idle_us: 0.0,
        culprits: Vec::new(),
        timeline,
        verdict,
        path: None,
        lost: Some(LostFrame {
            nic: nic.to_string(),
            sent,
            arrived,
            arrivals: arrivals.len() as u64,
            replies: replies as u64,
            watched_us,
            remedy: Remedy::none("a frame lost past this machine's driver is not a setting here"),
        }),
    })
}

#[cfg(test)]
mod tests;
