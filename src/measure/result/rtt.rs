//! The round-trip part of a NIC run's result: `RttSummary` (the "rtt" key of docs/json.md) with its reply checks,
//! the ESC id the probe read and the timestamp pairs used.

use serde::{Deserialize, Serialize};

/// Where the RTT timestamps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Timestamps {
    Hardware,
    Software,
}

/// Round trips through the SubDevice (NIC mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttSummary {
    pub(crate) count: u64,
    pub(crate) lost: u64,
    pub(crate) min_us: f64,
    pub(crate) avg_us: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    #[serde(default)]
    pub(crate) p999_us: f64,
    #[serde(default)]
    pub(crate) p9999_us: f64,
    pub(crate) max_us: f64,
    pub(crate) timestamps: Timestamps,
    /// Replies later than the budget (`budget_us`, the period unless --budget-us): each a missed cycle for a
    /// MainDevice.
    #[serde(default)]
    pub(crate) late: u64,
    /// Frames received that answer no request of this run in flight: another run's (another tag), stale or
    /// malformed. Any fails the verdict.
    #[serde(default)]
    pub(crate) unmatched: u64,
    /// Replies to a frame already answered (a loop, two chains answering one frame). Any fails the verdict.
    #[serde(default)]
    pub(crate) duplicates: u64,
    /// EtherCAT replies with working counter 0 (no SubDevice processed them); counted in `wkc_errors` too.
    #[serde(default)]
    pub(crate) wkc_zero: u64,
    /// Working counter seen in the replies (the number of SubDevices), when one was seen.
    #[serde(default)]
    pub(crate) wkc: Option<u16>,
    /// The full histogram of the round trips (ns), HdrHistogram's compressed V2 encoding in base64: bounded in
    /// size whatever the latencies (the 1 µs bins of older versions are gone).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) hdr: String,
    /// Which timestamp pairs measured the round trips (shown with -v).
    #[serde(default)]
    pub(crate) stamps: Option<StampCounts>,
    /// --txq/--rxq: the queues asked for and what the driver's counters showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) queue: Option<crate::measure::nic::queue::QueueReport>,
    /// The way the frames took through this host: "af_packet" or "af_xdp" (older results have no key: read as
    /// af_packet).
    #[serde(default = "af_packet")]
    pub(crate) path: String,
    /// `--path af_xdp`: the XDP program's mode, zero-copy or not, the socket's queue, and why the faster choice was
    /// refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) xdp: Option<XdpReport>,
    /// EtherCAT: when the frames reached the first SubDevice (its distributed clock), or why not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arrival: Option<super::ArrivalReport>,
    /// Frames not sent, the budget, and the working counter checks (flat keys in the JSON).
    #[serde(flatten)]
    pub(crate) checks: ReplyChecks,
}

fn af_packet() -> String {
    "af_packet".into()
}

/// How an `--path af_xdp` run's frames went: what it asked for first, what it got, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct XdpReport {
    /// "native" (in the driver) or "generic" (after it, on a socket buffer).
    pub(crate) xdp_mode: String,
    /// The socket's frames are the driver's own (XDP_ZEROCOPY) rather than copied.
    pub(crate) zero_copy: bool,
    /// The receive queue the socket is bound to, and sends on.
    pub(crate) queue: u32,
    /// Why native mode was refused (the kernel's error), when the mode is generic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why_generic: Option<String>,
    /// Why zero-copy was refused (the bind's error), when the socket copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why_copy: Option<String>,
    /// Frames not sent over the whole run because all of the socket's transmit frames were still waiting for the
    /// kernel: the tool's own ring was full (part of `not_sent`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) ring_full: u64,
    /// Frames a refused kick left on the transmit ring that went out with a later kick, over the whole run: sent,
    /// late by the wait (their replies count as late).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) sent_late: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a reply is held to beyond arriving: sent at all, in time, with the working counter of the whole chain.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ReplyChecks {
    /// Frames the kernel refused to send (ENOBUFS, ENETDOWN, …): not on the wire, so not counted as lost.
    pub(crate) not_sent: u64,
    /// A reply later than this is late (µs).
    pub(crate) budget_us: f64,
    /// The working counter every EtherCAT reply must carry (--expect-wkc, else learned from the preflight's replies).
    pub(crate) expected_wkc: Option<u16>,
    /// The working counters of the preflight's replies, in order, when `expected_wkc` was learned from them
    /// (EtherCAT without --expect-wkc).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) preflight_wkc: Vec<u16>,
    /// Replies with another working counter: a SubDevice did not process the frame.
    pub(crate) wkc_errors: u64,
    /// Working counter → replies. Keys go through strings: serde's flatten (ReplyChecks is flattened into
    /// RttSummary) cannot read integer map keys back.
    #[serde(with = "wkc_keys")]
    pub(crate) wkc_seen: std::collections::BTreeMap<u16, u64>,
    /// What the probe's BRD read at register 0x0000 of the SubDevices (ORed over the chain).
    pub(crate) esc: Option<EscId>,
    /// The replies stopped for 1 s mid-run while this machine's interface was there and up: the chain dropped
    /// out (the run ends there). Fails the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) dropout: Option<String>,
}

/// ESC type and revision (registers 0x0000 and 0x0001).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EscId {
    #[serde(rename = "type")]
    pub(crate) kind: u8,
    pub(crate) revision: u8,
}

impl ReplyChecks {
    /// Every way the frames fell short, for the verdict; empty when none did.
    pub(crate) fn shortfalls(&self, r: &RttSummary) -> Vec<String> {
        let mut v = Vec::new();
        if r.lost > 0 {
            v.push(format!("{} frame(s) lost", r.lost));
        }
        if self.not_sent > 0 {
            v.push(format!("{} frame(s) not sent", self.not_sent));
        }
        if r.late > 0 {
            v.push(format!(
                "{} reply(ies) later than {} us (missed cycles)",
                r.late, self.budget_us
            ));
        }
        if self.wkc_errors > 0 {
            v.push(format!("{} working counter error(s)", self.wkc_errors));
        }
        if r.duplicates > 0 {
            v.push(format!(
                "{} duplicate reply(ies) (a frame answered more than once: a loop, or two chains on one segment)",
                r.duplicates
            ));
        }
        if let Some(d) = &self.dropout {
            v.push(format!("a dropout: {d}"));
        }
        if r.unmatched > 0 {
            v.push(format!(
                "{} unmatched frame(s) (no request of this run: another MainDevice on the segment, or malformed)",
                r.unmatched
            ));
        }
        v
    }
}

impl RttSummary {
    /// NRTM-style 1 µs bins of the stored histogram: (bin start µs, count), first to last non-empty bin (at most
    /// 100 001 of them); none when the result has no histogram.
    pub(crate) fn bins_us(&self) -> Vec<(u64, u64)> {
        super::dist::decode(&self.hdr)
            .map(|h| super::dist::bins_of(&h, 1000))
            .unwrap_or_default()
            .into_iter()
            .map(|(lo, n)| (lo / 1000, n))
            .collect()
    }
}

/// Round trips per kind of timestamp pair: both hardware, both software, or send() time with the software RX
/// stamp (a frame whose TX stamp never came).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct StampCounts {
    pub(crate) hardware_supported: bool,
    pub(crate) hardware: u64,
    pub(crate) software: u64,
    pub(crate) send_time: u64,
    /// Why the run did not use hardware stamps (no driver support, a driver that stamps PTP frames only, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why_software: Option<String>,
}

/// `BTreeMap<u16, u64>` as a JSON object with string keys, readable inside a flattened struct.
mod wkc_keys {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        m: &BTreeMap<u16, u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k.to_string(), v)))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<u16, u64>, D::Error> {
        BTreeMap::<String, u64>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                k.parse::<u16>().map(|k| (k, v)).map_err(|_| {
                    serde::de::Error::custom(format!("working counter '{k}' is not a number"))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_counters_seen_survive_a_round_trip_through_json() {
        let text = r#"{"count":3,"lost":0,"min_us":1,"avg_us":1,"p50_us":1,"p99_us":1,"max_us":1,
            "timestamps":"software","wkc_seen":{"1":2,"2":1}}"#;
        let r: RttSummary = serde_json::from_str(text).unwrap();
        assert_eq!(r.checks.wkc_seen.get(&1), Some(&2));
        let back: RttSummary = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert!(serde_json::from_str::<RttSummary>(&text.replace("\"2\":1", "\"x\":1")).is_err());
    }
}
