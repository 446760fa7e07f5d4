//! NIC mode: a request that got no reply, from the trace around it. The sender marks each frame just before
//! send() ("rmp-eval s=FRAME"); after that marker, the sender thread's net_dev_xmit on the NIC is the frame leaving
//! (rc: what the driver said); until the reply to a later frame is marked, the frames arriving on the NIC are
//! counted against the replies marked. What the trace cannot tell is said: it ends at this machine's NIC driver.

use crate::measure::interference::cause::Remedy;
use crate::trace::event::{Event, Net, TraceEntry, What, events};
use crate::trace::model::{Explanation, LostFrame, PathEvent, TimelineStep};

/// "rmp-eval s=FRAME": the sender's marker.
fn send_mark(l: &Event) -> Option<u64> {
    match &l.what {
        What::Mark(text) => text.strip_prefix("rmp-eval s=")?.trim().parse().ok(),
        _ => None,
    }
}

/// A frame's event on `nic`: received (netif_receive_skb, or netif_rx), or with `xmit` sent.
fn on(l: &Event, at: Arrival, nic: &str) -> bool {
    match &l.what {
        What::Net { at: a, dev, .. } if dev == nic => matches!(
            (at, a),
            (Arrival::Xmit, Net::Xmit { .. })
                | (Arrival::Receive, Net::Receive)
                | (Arrival::Rx, Net::Rx)
        ),
        _ => false,
    }
}

/// Which of a NIC's frame events `on` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    Xmit,
    Receive,
    Rx,
}

impl Arrival {
    fn name(self) -> &'static str {
        match self {
            Arrival::Xmit => "net_dev_xmit",
            Arrival::Receive => "netif_receive_skb",
            Arrival::Rx => "netif_rx",
        }
    }
}

/// The frame leaving: the sender's transmit after its marker `si`, before its next one; and the driver's rc.
fn transmit(
    lines: &[&Event],
    sends: &[(usize, u64)],
    si: usize,
    nic: &str,
) -> (Option<usize>, Option<i64>) {
    let sl = lines[si];
    let next = sends
        .iter()
        .find(|(i, _)| *i > si)
        .map_or(lines.len(), |(i, _)| *i);
    let xi = (si + 1..next).find(|&i| lines[i].pid == sl.pid && on(lines[i], Arrival::Xmit, nic));
    let rc = xi.and_then(|i| match lines[i].what {
        What::Net {
            at: Net::Xmit { rc },
            ..
        } => Some(rc),
        _ => None,
    });
    (xi, rc)
}

/// What arrived on the NIC after the send, up to the line `until` (the reply to a later frame, or the end).
struct Watch {
    until: usize,
    kind: Arrival,
    arrivals: Vec<usize>,
    replies: usize,
}

/// Its reply would have come before the reply to a later frame (replies come back in order): up to that
/// marker, every frame arriving on the NIC (netif_receive_skb, or netif_rx where the first is not traced) is
/// set against the replies marked; more arrivals than replies is something that came back unmatched.
fn watch(lines: &[&Event], from: usize, frame: u64, nic: &str) -> Watch {
    let until = (from + 1..lines.len())
        .find(|&i| lines[i].mark().is_some_and(|m| m.cycle > frame))
        .unwrap_or(lines.len());
    let kind = if lines.iter().any(|l| on(l, Arrival::Receive, nic)) {
        Arrival::Receive
    } else {
        Arrival::Rx
    };
    let arrivals: Vec<usize> = (from + 1..until)
        .filter(|&i| on(lines[i], kind, nic))
        .collect();
    let replies = (from + 1..(until + 1).min(lines.len()))
        .filter(|&i| lines[i].mark().is_some())
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

/// Explains frame `first` from a window (all CPUs); with `tail` (the trace after the last reply), the first frame
/// ≥ `first` whose send is there. None: no such send in the trace (a gap's frame is then said to be unseen).
pub(crate) fn explain(
    entries: &[TraceEntry],
    nic: &str,
    first: u64,
    tail: bool,
) -> Option<Explanation> {
    let mut lines: Vec<&Event> = events(entries).collect();
    lines.sort_by_key(|l| l.ts_ns);
    let sends: Vec<(usize, u64)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| send_mark(l).map(|f| (i, f)))
        .collect();
    let &(si, frame) = sends
        .iter()
        .find(|(_, f)| if tail { *f >= first } else { *f == first })?;
    let sl = lines[si];
    let d = sl.ts_ns;
    let rel = |l: &&Event| (l.ts_ns as f64 - d as f64) / 1000.0;
    let ev = |l: &&Event, name: String| PathEvent {
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
            l.mark().map_or(0, |m| m.cycle),
            rel(l)
        ),
        None => format!(
            "until the trace ends ({:.0} µs after the send)",
            lines.last().map_or(0.0, &rel)
        ),
    };
    let watched_us = lines.get(until).or(lines.last()).map_or(0.0, rel);
    let mut timeline = vec![TimelineStep {
        at_us: 0.0,
        what: format!(
            "CPU {}: {} marks frame {frame} before send()",
            sl.cpu, sl.comm
        ),
    }];
    let sent = xi.map(|i| ev(&lines[i], format!("net_dev_xmit rc={}", rc.unwrap_or(0))));
    let arrived =
        (arrivals.len() > replies).then(|| ev(&lines[arrivals[0]], kind.name().to_string()));
    for (e, what) in [
        (&sent, "leaves"),
        (&arrived, "arrival not matched to a reply"),
    ] {
        if let Some(e) = e {
            timeline.push(TimelineStep {
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
