use super::*;
use crate::trace::event::text::parse;

/// Captured on the development VM (kernel 6.18.44, the raw reader's text): `run --nic` on a veth whose peer runs
/// tests/nic_faulty_reflector.py --drop-every 25 — the window kept for frame 23, which got no reply. The python
/// reflector answered ~3 ms late (replies to frames 22… arrive after the sends of 24 and 25).
const SAMPLE: &str =
    include_str!("../../../../tests/fixtures/samples/trace-firecracker-vm-veth-lost-frame.txt");
const NIC: &str = "ncA244880";
const XMIT23: &str =
    "28859.977676708: net_dev_xmit: dev=ncA244880 skbaddr=ffff88831bc35e00 len=60 rc=0";

#[test]
fn a_dropped_request_left_and_nothing_came_back_for_it() {
    let e = explain(&parse(SAMPLE), NIC, 23, false).unwrap();
    assert_eq!((e.cycle, e.cpu), (23, 1));
    let l = e.lost.as_ref().unwrap();
    let s = l.sent.as_ref().unwrap();
    assert_eq!((s.cpu, s.name.as_str()), (1, "net_dev_xmit rc=0"));
    assert!((s.at_us - 6.077).abs() < 0.01, "{s:?}");
    // The late replies to earlier frames that came in meanwhile were all matched.
    assert!(l.arrived.is_none(), "{l:?}");
    assert_eq!(l.arrivals, l.replies);
    assert!(l.arrivals >= 1);
    assert!(
        e.verdict
            .starts_with("frame 23: no reply — it left (net_dev_xmit on ncA244880, CPU 1, 6 µs"),
        "{}",
        e.verdict
    );
    assert!(
        e.verdict.contains("until the reply to frame 24 was marked"),
        "{}",
        e.verdict
    );
    // A gap's frame is that frame, not a later one; the tail's is the first sent from there on.
    assert!(explain(&parse(SAMPLE), NIC, 1000, true).is_none());
    assert!(
        explain(&parse(SAMPLE), NIC, 21, false).is_none(),
        "frame 21's send is not in the window"
    );
    assert_eq!(explain(&parse(SAMPLE), NIC, 21, true).unwrap().cycle, 22);
    assert!(
        explain(&parse(SAMPLE), "other0", 23, false)
            .unwrap()
            .lost
            .unwrap()
            .sent
            .is_none()
    );
}

#[test]
fn what_else_the_trace_can_say() {
    // The transmit not in the trace.
    let gone: String = SAMPLE
        .lines()
        .filter(|l| !l.contains(XMIT23))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = explain(&parse(&gone), NIC, 23, false).unwrap();
    assert!(
        e.verdict.contains("shows no transmit of it"),
        "{}",
        e.verdict
    );
    // Refused by the driver.
    let refused = SAMPLE.replace(XMIT23, &XMIT23.replace("rc=0", "rc=-105"));
    let e = explain(&parse(&refused), NIC, 23, false).unwrap();
    assert!(
        e.verdict
            .contains("the driver refused it (net_dev_xmit rc=-105"),
        "{}",
        e.verdict
    );
    // An extra arrival on our end that no reply accounts for.
    let extra = SAMPLE.replace(
        XMIT23,
        &format!("{XMIT23}\n   ksoftirqd/1-20      [001] 28859.977700000: netif_receive_skb: dev={NIC} skbaddr=0 len=46"),
    );
    let e = explain(&parse(&extra), NIC, 23, false).unwrap();
    let l = e.lost.unwrap();
    assert_eq!(l.arrivals, l.replies + 1);
    let a = l.arrived.unwrap();
    assert!((a.at_us - 29.369).abs() < 0.01, "{a:?}");
    assert!(e.verdict.contains("not a valid reply"), "{}", e.verdict);
}
