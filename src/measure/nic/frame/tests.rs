use super::*;
use crate::ethercat::codec::tests::hex;
use crate::ethercat::echo::{Echo, Echoer, Skip};
use crate::ethercat::esc::Chain;

// Captured with tshark on a veth (2026-12-02): Linux 6.18's own UDP stack (a Python socket bound to
// 169.254.88.1:34997, sendto 169.254.88.2:7, tx checksum offload off) sending our 12-byte mark for sequence 42
// plus 6 zero bytes. Its IP id is 0xc801; the kernel computed the checksums 0x6ebd (IP) and 0xcf40 (UDP).
const KERNEL_UDP: &str = "ffffffffffff 02524d504502 0800 4500 002e c801 4000 4011 6ebd a9fe5801 a9fe5802 \
                          88b5 0007 001a cf40 524d5045 01000000 0000002a 000000000000";

const MAC: [u8; 6] = [0x02, 0x52, 0x4d, 0x50, 0x45, 0x02];

fn probe(mode: Mode, pktlen: Option<u16>) -> Probe {
    Probe::new(
        mode,
        &Addrs::broadcast(MAC),
        wire_len(mode, pktlen, 1500).unwrap(),
        0,
    )
}

/// A reflector with one SubDevice at `mac`, answering UDP and ARP for DST_IP.
fn reflector(mac: [u8; 6]) -> Echoer {
    Echoer::new(Chain::new(1, 0), mac, DST_IP)
}

#[test]
fn checksums_match_the_kernels() {
    let mut f = hex(KERNEL_UDP);
    assert_eq!(
        ip_checksum(&f[14..34]),
        0,
        "a header with its checksum sums to 0"
    );
    f[24..26].fill(0);
    assert_eq!(ip_checksum(&f[14..34]), 0x6ebd);
    f[40..42].fill(0);
    assert_eq!(udp_checksum(&f[14..]), 0xcf40);
}

#[test]
fn udp_probe_is_the_frame_the_kernel_builds() {
    let mut p = probe(Mode::Udp, None);
    p.set_seq(42);
    let kernel = hex(KERNEL_UDP);
    let ours = p.frame();
    assert_eq!(ours.len(), kernel.len());
    // Same bytes but the IP id (ours is the sequence) and so the two checksums.
    for (i, (a, b)) in ours.iter().zip(&kernel).enumerate() {
        if !matches!(i, 18 | 19 | 24 | 25 | 40 | 41) {
            assert_eq!(a, b, "byte {i}");
        }
    }
    assert_eq!(ip_checksum(&ours[14..34]), 0);
    let mut z = ours.to_vec();
    z[40..42].fill(0);
    assert_eq!(udp_checksum(&z[14..]).to_be_bytes(), [ours[40], ours[41]]);
}

#[test]
fn udp_echo_round_trip_keeps_checksums_valid() {
    let mut p = probe(Mode::Udp, Some(200));
    p.set_seq(0x0102_0304);
    let mut f = p.frame().to_vec();
    assert_eq!(
        parse_reply(Mode::Udp, &f),
        Err(Reject::Foreign),
        "a request is no reply"
    );
    let refl = [0x02, 0, 0, 0, 0, 0x99];
    let mut echoer = reflector(refl);
    assert_eq!(echoer.echo_in_place(&mut f, 0), Ok(Echo::Udp));
    assert_eq!(&f[0..6], &MAC);
    assert_eq!(&f[6..12], &refl);
    assert_eq!(&f[26..30], &DST_IP);
    let r = parse_reply(Mode::Udp, &f).unwrap();
    assert_eq!(r.seq, 0x0102_0304);
    let mut z = f.clone();
    z[40..42].fill(0);
    assert_eq!(udp_checksum(&z[14..]).to_be_bytes(), [f[40], f[41]]);
    assert_eq!(
        echoer.echo_in_place(&mut f, 0),
        Err(Skip::Answer),
        "an echo is not echoed again"
    );
    f[24] ^= 1;
    assert_eq!(
        parse_reply(Mode::Udp, &f),
        Err(Reject::Invalid("bad IPv4 header checksum"))
    );
}

#[test]
fn ecat_probe_layout_and_reply() {
    let mut p = probe(Mode::Ecat, None);
    p.set_seq(0x1234_5678);
    let f = p.frame();
    assert_eq!(
        f.len(),
        MIN_FRAME,
        "54 bytes of EtherCAT, padded to the Ethernet minimum"
    );
    assert!(f[min_len(Mode::Ecat)..].iter().all(|&b| b == 0));
    assert_eq!(&f[7..12], &MAC[1..]);
    assert_eq!(
        f[6],
        MAC[0] & !0x02,
        "bit 0x02 clear: a request, not an answer"
    );
    let d: Vec<_> = codec::datagrams(f).unwrap().map(Result::unwrap).collect();
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[0].cmd, d[0].idx, d[0].ado, d[0].data.len()),
        (cmd::BRD, 0x78, 0, 2)
    );
    assert_eq!((d[1].cmd, d[1].idx, d[1].data.len()), (cmd::NOP, 0x78, 12));
    assert_eq!(
        parse_reply(Mode::Ecat, f),
        Ok(Reply {
            seq: 0x1234_5678,
            tag: 0,
            wkc: 0,
            esc: [0, 0],
            dc: None,
        })
    );
    let mut r = f.to_vec();
    assert_eq!(reflector(MAC).echo_in_place(&mut r, 0), Ok(Echo::Ecat));
    assert_eq!(
        parse_reply(Mode::Ecat, &r),
        Ok(Reply {
            seq: 0x1234_5678,
            tag: 0,
            wkc: 1,
            esc: [
                crate::ethercat::esc::ESC_TYPE,
                crate::ethercat::esc::ESC_REVISION
            ],
            dc: None,
        })
    );
    // A reply whose index disagrees with its sequence is someone else's.
    let mut x = r.clone();
    x[17] = 0x77;
    assert!(matches!(
        parse_reply(Mode::Ecat, &x),
        Err(Reject::Invalid(_))
    ));
    // SOEM's frames on the same wire are not ours.
    let soem = hex("ffffffffffff 030101010101 88a4 0e10 0704 0100 0000 0200 1100 0000 0100");
    assert!(matches!(
        parse_reply(Mode::Ecat, &soem),
        Err(Reject::Invalid(_))
    ));
}

#[test]
fn the_arrival_datagrams_read_the_previous_frames_latch_and_latch_their_own() {
    let mut p = Probe::with_arrival(Mode::Ecat, &Addrs::broadcast(MAC), MIN_FRAME, 9);
    assert!(p.has_arrival());
    assert_eq!(p.frame().len(), min_len(Mode::Ecat) + ARRIVAL_BYTES);
    assert_eq!(ARRIVAL_BYTES, 36);
    let mut r = reflector(MAC);
    let mut latches = Vec::new();
    for (seq, rx_ns) in [(1u32, 10_000u64), (2, 1_010_000), (3, 2_009_500)] {
        p.set_seq(seq);
        let d: Vec<_> = codec::datagrams(p.frame())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let got: Vec<_> = d.iter().map(|d| (d.cmd, d.idx, d.ado)).collect();
        let i = seq as u8;
        assert_eq!(
            got,
            [
                (cmd::BRD, i, 0),
                (cmd::NOP, i, 0),
                (cmd::APRD, i, 0x0918),
                (cmd::BWR, i, 0x0900)
            ],
            "the read before the latching write"
        );
        let mut f = p.frame().to_vec();
        r.echo_in_place(&mut f, rx_ns).unwrap();
        let reply = parse_reply(Mode::Ecat, &f).unwrap();
        let dc = reply.dc.unwrap();
        assert_eq!(
            (reply.seq, reply.wkc, dc.read_wkc, dc.latch_wkc),
            (seq, 1, 1, 1)
        );
        latches.push(dc.latch);
    }
    assert_eq!(latches[0], 0, "nothing latched before the first frame");
    assert_eq!(
        latches[2] - latches[1],
        1_000_000,
        "each reply carries the frame before's latch"
    );
    // --pktlen: the frame has the length asked for, the arrival datagrams at its end.
    let p = Probe::with_arrival(Mode::Ecat, &Addrs::broadcast(MAC), 300, 9);
    assert_eq!(p.frame().len(), 300);
    let mut f = p.frame().to_vec();
    r.echo_in_place(&mut f, 3_000_000).unwrap();
    assert!(parse_reply(Mode::Ecat, &f).unwrap().dc.is_some());
    // A SubDevice without DC: both arrival datagrams keep WKC 0, the BRD still counts it.
    let mut f = p.frame().to_vec();
    let mut none = Echoer::new(Chain::with_dc(1, 0, None), MAC, DST_IP);
    none.echo_in_place(&mut f, 0).unwrap();
    let reply = parse_reply(Mode::Ecat, &f).unwrap();
    assert_eq!(
        (reply.wkc, reply.dc.map(|d| (d.read_wkc, d.latch_wkc))),
        (1, Some((0, 0)))
    );
}

#[test]
fn one_pktlen_rule_for_every_mode() {
    for mode in [Mode::Ecat, Mode::Raw, Mode::Udp] {
        let mut p = probe(mode, Some(300));
        p.set_seq(7);
        assert_eq!(p.frame().len(), 300);
        let mut f = p.frame().to_vec();
        reflector(MAC).echo_in_place(&mut f, 0).unwrap();
        assert_eq!(parse_reply(mode, &f).map(|r| r.seq), Ok(7), "{mode:?}");
        assert_eq!(wire_len(mode, None, 1500), Ok(60));
        assert!(wire_len(mode, Some(59), 1500).is_err());
        assert_eq!(wire_len(mode, Some(1514), 1500), Ok(1514));
        let e = wire_len(mode, Some(1500), 1400).unwrap_err().to_string();
        assert!(e.contains("60 to 1414") && e.contains("MTU 1400"), "{e}");
        assert!(wire_len(mode, Some(1515), 9000).is_err());
    }
}

#[test]
fn raw_echo_only_answers_requests() {
    let mut p = probe(Mode::Raw, None);
    p.set_seq(9);
    let mut f = p.frame().to_vec();
    let mut r = reflector([2, 0, 0, 0, 0, 1]);
    assert_eq!(r.echo_in_place(&mut f, 0), Ok(Echo::Raw));
    assert_eq!(f[ETH_HLEN + 4], KIND_REPLY);
    assert_eq!(r.echo_in_place(&mut f, 0), Err(Skip::Answer));
    let mut other = f.clone();
    other[ETH_HLEN] = b'X';
    assert_eq!(parse_reply(Mode::Raw, &other), Err(Reject::Foreign));
}

#[test]
fn the_run_tag_comes_back_through_every_reflector_and_tells_runs_apart() {
    const TAG: u32 = 0x00ab_cdef;
    for mode in [Mode::Ecat, Mode::Raw, Mode::Udp] {
        let mut p = Probe::new(
            mode,
            &Addrs::broadcast(MAC),
            wire_len(mode, None, 1500).unwrap(),
            TAG | 0xff00_0000,
        );
        p.set_seq(5);
        assert_eq!(probe_seq(mode, p.frame(), TAG), Some(5), "{mode:?}");
        assert_eq!(probe_seq(mode, p.frame(), TAG ^ 1), None, "{mode:?}");
        let mut f = p.frame().to_vec();
        reflector(MAC).echo_in_place(&mut f, 0).unwrap();
        let r = parse_reply(mode, &f).unwrap();
        assert_eq!((r.seq, r.tag), (5, TAG), "{mode:?}: only 24 bits travel");
    }
    // A real ESC passes NOP data through: the tag is in the NOP's mark, after "RMPE" and the kind byte.
    let mut p = probe(Mode::Ecat, None);
    p.set_seq(1);
    let d: Vec<_> = codec::datagrams(p.frame())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(d[1].cmd, cmd::NOP);
    assert_eq!(&d[1].data[0..5], b"RMPE\x01");
    let a = run_tag();
    assert!(a != 0 && a <= TAG_MASK, "{a:#x}");
}
