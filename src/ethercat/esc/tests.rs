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
