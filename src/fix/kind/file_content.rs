//! A file's bytes, mode and owner as the journal keeps them (the file kind's record, file.rs): text when the bytes
//! are UTF-8, so that a journal stays readable, else hex — exactly one of the two, refused otherwise.

use serde::{Deserialize, Serialize};

use crate::host::FileMeta;

/// File bytes as the journal keeps them: text when they are UTF-8 (a readable journal), else hex. JSON:
/// {"text": "…"} or {"hex": "…"}, exactly one of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawContent", into = "RawContent")]
pub(crate) enum Content {
    Text(String),
    Bytes(Vec<u8>),
}

#[derive(Serialize, Deserialize)]
struct RawContent {
    text: Option<String>,
    hex: Option<String>,
}

impl Content {
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(s) => Content::Text(s),
            Err(e) => Content::Bytes(e.into_bytes()),
        }
    }
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Content::Text(s) => s.as_bytes(),
            Content::Bytes(b) => b,
        }
    }
}

/// Why a journal's file content is refused (serde puts it in the journal's parse error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadContent {
    #[error("hex content of odd length")]
    OddHex,
    #[error("bad hex content at byte {0}")]
    BadHex(usize),
    #[error("a saved file with both text and hex content")]
    Both,
    #[error("a saved file with no content (text and hex both null)")]
    Neither,
}

/// Strict hex: an even number of hex digits, nothing else.
fn unhex(h: &str) -> std::result::Result<Vec<u8>, BadContent> {
    if !h.len().is_multiple_of(2) {
        return Err(BadContent::OddHex);
    }
    (0..h.len() / 2)
        .map(|i| {
            h.get(2 * i..2 * i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or(BadContent::BadHex(i))
        })
        .collect()
}

impl TryFrom<RawContent> for Content {
    type Error = BadContent;
    fn try_from(r: RawContent) -> std::result::Result<Self, BadContent> {
        match (r.text, r.hex) {
            (Some(t), None) => Ok(Content::Text(t)),
            (None, Some(h)) => Ok(Content::Bytes(unhex(&h)?)),
            (Some(_), Some(_)) => Err(BadContent::Both),
            (None, None) => Err(BadContent::Neither),
        }
    }
}

impl From<Content> for RawContent {
    fn from(c: Content) -> Self {
        match c {
            Content::Text(t) => RawContent {
                text: Some(t),
                hex: None,
            },
            Content::Bytes(b) => RawContent {
                text: None,
                hex: Some(b.iter().map(|b| format!("{b:02x}")).collect()),
            },
        }
    }
}

/// A file as it was: content, mode, owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedFile {
    #[serde(flatten)]
    pub(crate) content: Content,
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl SavedFile {
    pub(crate) fn new(bytes: Vec<u8>, m: FileMeta) -> Self {
        SavedFile {
            content: Content::new(bytes),
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
        }
    }
    pub(crate) fn meta(&self) -> FileMeta {
        FileMeta {
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_text_or_hex_never_both_nor_neither() {
        let m = FileMeta {
            mode: 0o600,
            uid: 0,
            gid: 0,
        };
        let f = SavedFile::new(vec![0xff, 0, b'a'], m.clone());
        let j = serde_json::to_string(&f).unwrap();
        assert!(
            j.contains("\"hex\":\"ff0061\"") && j.contains("\"text\":null"),
            "{j}"
        );
        let back: SavedFile = serde_json::from_str(&j).unwrap();
        assert_eq!(back.content.bytes(), [0xff, 0, b'a']);
        assert_eq!(SavedFile::new(b"x\n".to_vec(), m).content.bytes(), b"x\n");
        for bad in [
            r#"{"text":null,"hex":null,"mode":420,"uid":0,"gid":0}"#,
            r#"{"text":"a","hex":"61","mode":420,"uid":0,"gid":0}"#,
            r#"{"text":null,"hex":"6","mode":420,"uid":0,"gid":0}"#,
            r#"{"text":null,"hex":"zz","mode":420,"uid":0,"gid":0}"#,
        ] {
            assert!(serde_json::from_str::<SavedFile>(bad).is_err(), "{bad}");
        }
    }
}
