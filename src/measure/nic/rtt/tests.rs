use super::*;

fn sw(ns: u64) -> Stamps {
    Stamps {
        sw_ns: ns,
        hw_ns: 0,
        tx: false,
    }
}

fn hw(sw_ns: u64, hw_ns: u64) -> Stamps {
    Stamps {
        sw_ns,
        hw_ns,
        tx: false,
    }
}

const NO_SEND_TIME: fn(u32) -> u64 = |_| panic!("send() time must not be needed");

#[test]
fn software_pairs_make_round_trips() {
    let mut m = Matcher::new(100, 1_000_000, Some(1));
    // Frame 100 sent at 1 s, replied 5 µs later; frame 101 replied before its TX stamp was read.
    m.on_tx(100, sw(1_000_000_000), 1, NO_SEND_TIME);
    m.on_reply(100, Some(1), sw(1_000_005_000), 0, 1, NO_SEND_TIME);
    m.on_reply(101, Some(1), sw(1_001_007_000), 0, 2, NO_SEND_TIME);
    assert_eq!(m.dist.count(), 1, "101 waits for its TX stamp");
    m.on_tx(101, sw(1_001_000_000), 2, NO_SEND_TIME);
    assert_eq!(m.dist.count(), 2);
    assert_eq!(m.dist.summary().min_us, 5.0);
    assert_eq!(m.dist.summary().max_us, 7.0);
    assert_eq!(m.counts.matched, 2);
    assert_eq!(
        (m.counts.sw_pairs, m.counts.hw_pairs, m.counts.late),
        (2, 0, 0)
    );
    assert_eq!((m.counts.wkc_min, m.counts.wkc_max), (Some(1), Some(1)));
}

#[test]
fn hardware_pairs_win_and_clocks_are_not_mixed() {
    let mut m = Matcher::new(0, 1_000_000, None);
    m.on_tx(0, hw(0, 50_000), 1, NO_SEND_TIME);
    m.on_reply(0, Some(2), hw(9_999_999, 62_000), 0, 1, NO_SEND_TIME);
    assert_eq!(
        m.dist.summary().max_us,
        12.0,
        "hardware stamps, not the software RX one"
    );
    // Hardware TX stamp missing but software ones present: the software pair, never hw with sw.
    m.on_tx(1, sw(2_000_000), 2, NO_SEND_TIME);
    m.on_reply(1, Some(2), hw(2_020_000, 77), 0, 2, NO_SEND_TIME);
    assert_eq!((m.counts.hw_pairs, m.counts.sw_pairs), (1, 1));
    assert_eq!(m.dist.summary().max_us, 20.0);
}

#[test]
fn duplicates_strangers_and_preflight_leftovers() {
    let mut m = Matcher::new(10, 1_000_000, None);
    m.on_tx(10, sw(1000), 1, NO_SEND_TIME);
    m.on_reply(10, Some(1), sw(3000), 0, 1, NO_SEND_TIME);
    m.on_reply(10, Some(1), sw(4000), 0, 1, NO_SEND_TIME);
    assert_eq!(
        (m.counts.duplicates, m.counts.unmatched),
        (1, 0),
        "a second reply to the same frame is a duplicate"
    );
    m.on_reply(11, Some(1), sw(4000), 0, 1, NO_SEND_TIME);
    assert_eq!(m.counts.unmatched, 1, "a reply to a frame not sent yet");
    m.on_reply(7, Some(1), sw(4000), 0, 1, NO_SEND_TIME);
    assert_eq!(
        m.counts.unmatched, 1,
        "the preflight's late reply is ignored"
    );
    m.on_unmatched();
    assert_eq!(m.counts.unmatched, 2);
    assert_eq!((m.counts.matched, m.counts.duplicates), (1, 1));
    let mut total = Counts::default();
    total.merge(&m.counts);
    total.merge(&m.counts);
    assert_eq!((total.duplicates, total.unmatched), (2, 4));
}

#[test]
fn replies_older_than_the_ring_are_unmatched() {
    let mut m = Matcher::new(0, 1_000_000, None);
    m.on_reply(0, None, sw(5), 0, RING as u64 + 1, |_| 1);
    assert_eq!((m.counts.matched, m.counts.unmatched), (0, 1));
}

#[test]
fn missing_tx_stamp_falls_back_to_send_time_and_late_is_counted() {
    let mut m = Matcher::new(0, 100_000, None);
    let send_time = |seq: u32| 1_000_000 * u64::from(seq);
    // Frame 0 never gets a TX stamp; 16 later replies settle it with its send() time.
    m.on_reply(0, Some(1), sw(150_000), 0, 1, send_time);
    for seq in 1..=16u32 {
        let t = send_time(seq);
        m.on_tx(seq, sw(t + 1_000), u64::from(seq) + 1, send_time);
        m.on_reply(
            seq,
            Some(1),
            sw(t + 11_000),
            0,
            u64::from(seq) + 1,
            send_time,
        );
    }
    assert_eq!(m.counts.send_time_pairs, 1);
    assert_eq!(m.counts.sw_pairs, 16);
    assert_eq!(m.counts.late, 1, "150 µs > the 100 µs period");
    assert_eq!(m.dist.summary().max_us, 150.0);
    // Without software RX stamp either, the user-space receive time stands in.
    let mut m = Matcher::new(0, 100_000, None);
    m.on_reply(0, None, Stamps::default(), 30_000, 1, |_| 10_000);
    m.finish(|_| 10_000);
    assert_eq!(m.dist.summary().max_us, 20.0);
}

#[test]
fn every_reply_with_another_working_counter_is_an_error_and_the_values_are_kept() {
    // A chain of two: every tenth reply comes back with WKC 1 (one SubDevice missed it), one with 0.
    let mut m = Matcher::new(0, 1_000_000, Some(2));
    let t = |ns| Stamps {
        sw_ns: ns,
        hw_ns: 0,
        tx: false,
    };
    for i in 0..100u32 {
        let w = if i == 55 {
            0
        } else if i % 10 == 9 {
            1
        } else {
            2
        };
        m.on_tx(i, t(1_000 * u64::from(i)), 100, |_| 0);
        m.on_reply(i, Some(w), t(1_000 * u64::from(i) + 5_000), 0, 100, |_| 0);
    }
    assert_eq!(m.counts.matched, 100);
    assert_eq!(m.counts.wkc_errors, 11);
    let mut seen: Vec<_> = m
        .counts
        .wkc_seen
        .iter()
        .filter(|s| s.1 > 0)
        .copied()
        .collect();
    seen.sort();
    assert_eq!(seen, vec![(0, 1), (1, 10), (2, 89)]);
    // More distinct values than slots: the rest is counted, not lost.
    let mut m = Matcher::new(0, 1_000_000, None);
    for i in 0..20u32 {
        m.on_reply(i, Some(i as u16), t(5), 0, 20, |_| 0);
    }
    assert_eq!((m.counts.wkc_other, m.counts.wkc_errors), (12, 0));
}
