use super::*;
use crate::ethercat::codec::tests::hex;
use crate::ethercat::codec::{
    DG_HLEN, ECAT_HLEN, ETH_HLEN, datagrams, put_datagram_header, put_ecat_header,
};

// Captured with tshark on a veth (2026-12-02), pysoem 1.1.13 (SOEM) `config_init()`: its detection BRD of 2 bytes
// at 0x0000, source MAC 01:01:01:01:01:01.
const SOEM_BRD_0000: &str =
    "ffffffffffff 010101010101 88a4 0e10 0704 0000 0000 0200 0000 0000 0000";

/// One datagram frame: `cmd` at ADP/ADO with `data`, WKC 0, source MAC 01:01:01:01:01:01 as SOEM sends.
fn frame(cmd: u8, adp: u16, ado: u16, data: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; ETH_HLEN + ECAT_HLEN + DG_HLEN + data.len() + 2];
    f[0..6].fill(0xff);
    f[6..12].fill(0x01);
    f[12..14].copy_from_slice(&[0x88, 0xa4]);
    put_ecat_header(&mut f, DG_HLEN + data.len() + 2);
    let o = put_datagram_header(
        &mut f,
        ETH_HLEN + ECAT_HLEN,
        cmd,
        7,
        adp,
        ado,
        data.len(),
        false,
    );
    f[o..o + data.len()].copy_from_slice(data);
    f
}

/// (ADP, data, WKC) of the frame's only datagram.
fn dg(f: &[u8]) -> (u16, Vec<u8>, u16) {
    let d = datagrams(f).unwrap().next().unwrap().unwrap();
    (d.adp, d.data.to_vec(), d.wkc)
}

#[test]
fn soem_detection_brd_counts_every_subdevice_and_reads_the_esc_type() {
    let mut c = Chain::new(3, 0);
    let mut f = hex(SOEM_BRD_0000);
    assert_eq!(c.process(&mut f), Ok(Processed::Answer));
    assert_eq!(dg(&f), (3, vec![ESC_TYPE, ESC_REVISION], 3));
    assert_eq!(f[6], 0x03, "bit 0x02 set in the source MAC, as an ESC does");
}

#[test]
fn an_answer_is_never_processed_again() {
    let mut c = Chain::new(1, 0);
    let mut f = hex(SOEM_BRD_0000);
    c.process(&mut f).unwrap();
    let answered = f.clone();
    assert_eq!(c.process(&mut f), Ok(Processed::AlreadyAnswered));
    assert_eq!(f, answered, "untouched: WKC stays 1");
}

#[test]
fn position_addressing_answers_only_at_position_zero() {
    let mut c = Chain::new(3, 0x1000);
    // APRD of the station address at position 1 (ADP -1): the second SubDevice answers.
    let mut f = frame(0x01, 0xffff, 0x0010, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f), (2, 0x1001u16.to_le_bytes().to_vec(), 1));
    // Position 5 of a chain of 3: nobody.
    let mut f = frame(0x01, 0u16.wrapping_sub(5), 0x0010, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f).2, 0);
}

#[test]
fn node_addressing_uses_the_station_address_and_writes_stick() {
    let mut c = Chain::new(2, 0x1000);
    let mut f = frame(0x04, 0x1001, 0x0010, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(
        dg(&f),
        (0x1001, vec![0x01, 0x10], 1),
        "ADP unchanged for FP"
    );
    let mut f = frame(0x04, 0x2000, 0x0010, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f).2, 0, "no such station");
    // Configure the first one as SOEM does (APWR station address), then read it back by that address.
    let mut f = frame(0x02, 0, 0x0010, &0x1234u16.to_le_bytes());
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f).2, 1);
    assert_eq!(c.devices[0].station(), 0x1234);
    // FPRW: the old content comes back, WKC +3.
    let mut f = frame(0x06, 0x1234, 0x0f00, &[0xaa]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f), (0x1234, vec![0], 3));
}

#[test]
fn logical_commands_have_no_mapping_and_identification_is_read_only() {
    let mut c = Chain::new(2, 0);
    for cmd in [0x0a, 0x0b, 0x0c] {
        let mut f = frame(cmd, 0, 0, &[1, 2, 3, 4]);
        c.process(&mut f).unwrap();
        assert_eq!(dg(&f), (0, vec![1, 2, 3, 4], 0), "cmd {cmd:#x}");
    }
    let mut f = frame(0x08, 0, 0x0000, &[0xee, 0xee]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f).2, 2, "BWR counted by both");
    let mut f = frame(0x07, 0, 0x0000, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(
        dg(&f).1,
        vec![ESC_TYPE, ESC_REVISION],
        "type not overwritten"
    );
}

#[test]
fn al_state_machine_reaches_pre_op_and_refuses_safe_op() {
    let mut c = Chain::new(1, 0);
    let al = |c: &Chain| c.devices[0].al_status();
    assert_eq!(al(&c), al::INIT);
    let mut f = frame(0x02, 0, reg::AL_CONTROL as u16, &al::PRE_OP.to_le_bytes());
    c.process(&mut f).unwrap();
    assert_eq!(al(&c), al::PRE_OP);
    let mut f = frame(0x02, 0, reg::AL_CONTROL as u16, &al::SAFE_OP.to_le_bytes());
    c.process(&mut f).unwrap();
    assert_eq!(al(&c), al::PRE_OP | al::ERROR);
    let mut f = frame(0x01, 0, reg::AL_STATUS_CODE as u16, &[0, 0]);
    c.process(&mut f).unwrap();
    assert_eq!(dg(&f).1, al::INVALID_CHANGE.to_le_bytes().to_vec());
    // INIT with the acknowledge bit clears the error, as SOEM's reset does.
    let mut f = frame(
        0x08,
        0,
        reg::AL_CONTROL as u16,
        &(al::INIT | al::ERROR).to_le_bytes(),
    );
    c.process(&mut f).unwrap();
    assert_eq!(al(&c), al::INIT);
}

/// A frame of several datagrams (cmd, ADP, ADO, data length), zeroed data, in order.
fn frame_of(dgs: &[(u8, u16, u16, usize)]) -> Vec<u8> {
    let body: usize = dgs.iter().map(|d| DG_HLEN + d.3 + 2).sum();
    let mut f = vec![0u8; ETH_HLEN + ECAT_HLEN + body];
    f[0..6].fill(0xff);
    f[12..14].copy_from_slice(&[0x88, 0xa4]);
    put_ecat_header(&mut f, body);
    let mut o = ETH_HLEN + ECAT_HLEN;
    for (i, &(cmd, adp, ado, len)) in dgs.iter().enumerate() {
        o = put_datagram_header(&mut f, o, cmd, i as u8, adp, ado, len, i + 1 < dgs.len())
            + len
            + 2;
    }
    f
}

/// (data, WKC) of each datagram.
fn dgs(f: &[u8]) -> Vec<(Vec<u8>, u16)> {
    datagrams(f)
        .unwrap()
        .map(|d| {
            let d = d.unwrap();
            (d.data.to_vec(), d.wkc)
        })
        .collect()
}

fn u64_of(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// The run's arrival datagrams: APRD of the first SubDevice's 0x0918 before the BWR that latches 0x0900.
const ARRIVAL: [(u8, u16, u16, usize); 2] = [(0x01, 0, 0x0918, 8), (0x08, 0, 0x0900, 4)];

#[test]
fn a_write_to_0900_latches_the_frame_and_a_read_before_it_returns_the_previous_latch() {
    let mut c = Chain::new(3, 0);
    let mut f = frame_of(&ARRIVAL);
    c.process_at(&mut f, 5_000_000).unwrap();
    let d = dgs(&f);
    assert_eq!(
        d[0],
        (vec![0; 8], 1),
        "nothing latched yet: zeros, read by one"
    );
    assert_eq!(d[1].1, 3, "the BWR latches in every SubDevice");
    let mut f = frame_of(&ARRIVAL);
    c.process_at(&mut f, 5_250_000).unwrap();
    // The first frame's latch: the local time starts a second before the first frame.
    let first = u64_of(&dgs(&f)[0].0);
    assert_eq!(first, 1_000_000_000);
    let mut f = frame_of(&ARRIVAL);
    c.process_at(&mut f, 6_250_000).unwrap();
    assert_eq!(
        u64_of(&dgs(&f)[0].0) - first,
        250_000,
        "the second frame, 250 us later"
    );
    // Further down the chain (positions 1 and 2), later by position; port 1 when the frame comes back; the last
    // closes port 1.
    let mut f = frame_of(&[(0x01, 0xffff, 0x0900, 0x20), (0x01, 0xfffe, 0x0900, 0x20)]);
    c.process_at(&mut f, 7_000_000).unwrap();
    let d = dgs(&f);
    let pu = |b: &[u8]| u64_of(&b[0x18..]);
    let port = |b: &[u8], p: usize| u32::from_le_bytes(b[4 * p..4 * p + 4].try_into().unwrap());
    // The third frame's latch (the last write): a second and 1.25 ms on, at the second SubDevice 1 us later.
    assert_eq!(pu(&d[0].0), 1_001_250_000 + 1_000);
    assert_eq!(pu(&d[1].0) - pu(&d[0].0), 1_000);
    assert_eq!(port(&d[0].0, 0), pu(&d[0].0) as u32);
    assert_eq!(
        port(&d[0].0, 1) - port(&d[0].0, 0),
        2_000,
        "out to the third and back"
    );
    assert_eq!(port(&d[1].0, 1), 0, "the last SubDevice's port 1 is closed");
}

#[test]
fn a_drifting_clock_runs_fast_by_its_ppm_and_the_system_time_adds_the_offset() {
    let mut c = Chain::with_dc(1, 0, Some(DcSpec { drift_ppm: 100.0 }));
    let mut f = frame_of(&ARRIVAL);
    c.process_at(&mut f, 1_000).unwrap();
    let mut f = frame_of(&[ARRIVAL[0], ARRIVAL[1], (0x01, 0, 0x0918, 8)]);
    c.process_at(&mut f, 1_000 + 1_000_000_000).unwrap();
    let d = dgs(&f);
    assert_eq!(
        u64_of(&d[2].0) - u64_of(&d[0].0),
        1_000_100_000,
        "1 s at +100 ppm"
    );
    // The MainDevice's offset written to 0x0920 shows in the system time at 0x0910, which cannot be written.
    let mut f = frame_of(&[(0x02, 0, 0x0920, 8)]);
    let o = ETH_HLEN + ECAT_HLEN + DG_HLEN;
    f[o..o + 8].copy_from_slice(&5_000u64.to_le_bytes());
    c.process_at(&mut f, 2_000_000_000).unwrap();
    let mut f = frame_of(&[(0x05, 0, 0x0910, 8), (0x04, 0, 0x0910, 8)]);
    f[o..o + 8].copy_from_slice(&7u64.to_le_bytes());
    c.process_at(&mut f, 2_000_000_000).unwrap();
    let d = dgs(&f);
    assert_eq!(
        d[0].1, 1,
        "FPWR to the system time counts, as a real ESC's drift control write does"
    );
    let expect = 1_000_000_000 + 1_999_999_000 + 199_999 + 5_000;
    assert_eq!(u64_of(&d[1].0), expect);
}

#[test]
fn a_subdevice_without_dc_leaves_the_working_counter_and_the_data_alone() {
    let mut c = Chain::with_dc(2, 0, None);
    let mut f = frame_of(&[
        (0x07, 0, 0x0000, 2),
        ARRIVAL[0],
        ARRIVAL[1],
        (0x07, 0, 0x0008, 2),
    ]);
    c.process_at(&mut f, 1_000).unwrap();
    let d = dgs(&f);
    assert_eq!(d[0].1, 2, "the BRD still counts both");
    assert_eq!(d[1], (vec![0; 8], 0));
    assert_eq!(d[2].1, 0);
    assert_eq!(d[3].0, vec![0, 0], "no DC in the features register");
    let mut c = Chain::new(1, 0);
    let mut f = frame_of(&[(0x07, 0, 0x0008, 2)]);
    c.process(&mut f).unwrap();
    assert_eq!(dgs(&f)[0].0, vec![0x0c, 0], "DC, 64 bits");
}
