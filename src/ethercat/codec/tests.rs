use super::*;
use crate::ethercat::esc::Chain;

/// One software SubDevice processing the frame (what `reflect` does); the number of datagrams on success.
fn reflect_in_place(f: &mut [u8]) -> Result<usize, EcatError> {
    let n = datagrams(f)?.count();
    Chain::new(1, 0).process(f)?;
    Ok(n)
}

pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// Captured with tshark on a veth (2026-12-02) while pysoem 1.1.13 (SOEM) ran `config_init()` with no SubDevice:
// its first frame, BWR 1 byte to register 0x0103, and its detection BRD of 2 bytes at 0x0000.
const SOEM_BWR_0103: &str = "ffffffffffff 010101010101 88a4 0d10 0801 0000 0301 0100 0000 00 0000";
const SOEM_BRD_0000: &str =
    "ffffffffffff 010101010101 88a4 0e10 0704 0000 0000 0200 0000 0000 0000";
// The original rmp-eval's probe (tests/nic/README.md, "The probe frame"): BWR 1 byte to 0x0500, index 0xff, source MAC zero.
const ORIGINAL_PROBE: &str = "ffffffffffff 000000000000 88a4 0d10 08ff 0000 0005 0100 0000 00 0000";

#[test]
fn decodes_soem_detection_frames() {
    let f = hex(SOEM_BRD_0000);
    assert_eq!(f.len(), 30);
    let dgs: Vec<_> = datagrams(&f).unwrap().map(Result::unwrap).collect();
    assert_eq!(dgs.len(), 1);
    let d = dgs[0];
    assert_eq!((d.cmd, d.idx, d.adp, d.ado), (cmd::BRD, 4, 0, 0));
    assert_eq!((d.data.len(), d.wkc, d.more), (2, 0, false));

    let f = hex(SOEM_BWR_0103);
    let d = datagrams(&f).unwrap().next().unwrap().unwrap();
    assert_eq!(
        (d.cmd, d.idx, d.ado, d.data.len()),
        (cmd::BWR, 1, 0x0103, 1)
    );
    let f = hex(ORIGINAL_PROBE);
    let d = datagrams(&f).unwrap().next().unwrap().unwrap();
    assert_eq!(
        (d.cmd, d.idx, d.ado, d.data),
        (cmd::BWR, 0xff, 0x0500, &[0u8][..])
    );
}

#[test]
fn reflecting_increments_wkc_and_marks_the_source_mac() {
    let mut f = hex(SOEM_BRD_0000);
    assert_eq!(reflect_in_place(&mut f).unwrap(), 1);
    let d = datagrams(&f).unwrap().next().unwrap().unwrap();
    assert_eq!(d.wkc, 1);
    assert_eq!(d.adp, 1, "broadcast commands increment the position");
    assert_eq!(f[6], 0x03);
}

#[test]
fn padding_after_the_datagrams_is_ignored() {
    // A real NIC pads the 30-byte frame to 60 bytes.
    let mut f = hex(SOEM_BRD_0000);
    f.resize(60, 0);
    assert_eq!(datagrams(&f).unwrap().count(), 1);
    assert_eq!(reflect_in_place(&mut f).unwrap(), 1);
}

#[test]
fn malformed_frames_are_refused_not_panicked_on() {
    let good = hex(SOEM_BRD_0000);
    assert_eq!(datagrams(&good[..15]).err(), Some(EcatError::Short));
    let mut other = good.clone();
    other[12] = 0x08;
    other[13] = 0x00;
    assert_eq!(datagrams(&other).err(), Some(EcatError::NotEcat));
    let mut bad_type = good.clone();
    bad_type[15] = 0x50; // type 5
    assert_eq!(datagrams(&bad_type).err(), Some(EcatError::NotCommands));
    let mut too_long = good.clone();
    too_long[14] = 0x7f; // 0x7f bytes of datagrams in a 30-byte frame
    assert_eq!(datagrams(&too_long).err(), Some(EcatError::BadLength));
    let mut dlen = good.clone();
    dlen[22] = 0x20; // the datagram claims 32 data bytes
    let r: Vec<_> = datagrams(&dlen).unwrap().collect();
    assert_eq!(r, vec![Err(EcatError::Truncated)]);
    assert!(reflect_in_place(&mut dlen).is_err());
    // Every prefix of a good frame is either refused or parsed, never a panic.
    for n in 0..good.len() {
        let mut p = good[..n].to_vec();
        let _ = reflect_in_place(&mut p);
    }
}

#[test]
fn nop_is_left_alone_like_an_esc_does() {
    let mut f = vec![0u8; ETH_HLEN + ECAT_HLEN + 2 * (DG_HLEN + WKC_LEN) + 4];
    f[12..14].copy_from_slice(&ETHERTYPE_ECAT.to_be_bytes());
    put_ecat_header(&mut f, 2 * (DG_HLEN + WKC_LEN) + 4);
    let o = put_datagram_header(&mut f, 16, cmd::BRD, 7, 0, 0, 2, true);
    put_datagram_header(&mut f, o + 4, cmd::NOP, 7, 0, 0, 2, false);
    reflect_in_place(&mut f).unwrap();
    let w: Vec<u16> = datagrams(&f).unwrap().map(|d| d.unwrap().wkc).collect();
    assert_eq!(w, vec![1, 0]);
}
