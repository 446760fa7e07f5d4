//! The kernel's binary trace format (tracefs `per_cpu/cpuN/trace_pipe_raw`): the page layout (`events/header_page`),
//! the event header (type_len:5, time_delta:27, array[0]; type_len 29 padding, 30 time extend, 31 absolute time
//! stamp, 1..=28 a data event of type_len×4 bytes, 0 a data event whose length is in array[0]) and an event's
//! field layout (`events/SYS/NAME/format`). Pure functions over bytes and text; the reader is trace::raw.

/// Page layout from `events/header_page`: where the commit word and the data are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHeader {
    pub(crate) commit_offset: usize,
    pub(crate) commit_size: usize,
    pub(crate) data_offset: usize,
    /// Header + data: the size of one read of trace_pipe_raw.
    pub(crate) page_size: usize,
}

/// One field of an event: `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) ty: String,
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) signed: bool,
}

/// An event's format: its id (the record's common_type) and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Format {
    pub(crate) name: String,
    pub(crate) id: u16,
    pub(crate) fields: Vec<Field>,
}

/// The `offset:N;` style value after `key:` in a format line.
fn attr(line: &str, key: &str) -> Option<usize> {
    let at = line.find(&format!("{key}:"))? + key.len() + 1;
    line[at..].split(';').next()?.trim().parse().ok()
}

/// "TYPE NAME" or "TYPE NAME[16]" → (type, name); the array suffix stays in the type.
fn split_decl(decl: &str) -> Option<(String, String)> {
    let decl = decl.trim();
    let (ty, name) = decl.rsplit_once(' ')?;
    let (name, dims) = match name.find('[') {
        Some(i) => (&name[..i], &name[i..]),
        None => (name, ""),
    };
    Some((format!("{}{dims}", ty.trim()), name.to_string()))
}

fn fields(text: &str) -> Vec<Field> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let decl = l.strip_prefix("field:")?.split(';').next()?;
            let (ty, name) = split_decl(decl)?;
            Some(Field {
                name,
                ty,
                offset: attr(l, "offset")?,
                size: attr(l, "size")?,
                signed: attr(l, "signed").unwrap_or(0) == 1,
            })
        })
        .collect()
}

/// Parses `events/header_page`; None when it lacks the commit or data field.
pub(crate) fn page_header(text: &str) -> Option<PageHeader> {
    let f = fields(text);
    let get = |n: &str| f.iter().find(|x| x.name == n);
    let commit = get("commit")?;
    let data = get("data")?;
    Some(PageHeader {
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
        page_size: data.offset + data.size,
    })
}

/// Parses `events/SYS/NAME/format`.
pub(crate) fn format(text: &str) -> Option<Format> {
    let mut name = None;
    let mut id = None;
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("name: ") {
            name = Some(n.trim().to_string());
        } else if let Some(i) = l.strip_prefix("ID: ") {
            id = i.trim().parse().ok();
        }
    }
    Some(Format {
        name: name?,
        id: id?,
        fields: fields(text),
    })
}

/// The commit word's flags: events were lost before this page, and their count is stored after the data.
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// An absolute time stamp holds the low 59 bits; the top ones come from the running time.
const TS_MSB: u64 = 0xf8 << 56;

/// One data record of a page: its time and its bytes (common_type first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub(crate) ts: u64,
    pub(crate) data: &'a [u8],
}

/// A decoded page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Page<'a> {
    /// Events the kernel dropped before this page: Some(n) counted, Some(0) dropped but not counted.
    pub(crate) lost: Option<u64>,
    pub(crate) records: Vec<Record<'a>>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads an unsigned integer of `size` bytes (1, 2, 4, 8) in the machine's byte order.
pub(crate) fn uint(b: &[u8], at: usize, size: usize) -> Option<u64> {
    let s = b.get(at..at + size)?;
    Some(match size {
        1 => u64::from(s[0]),
        2 => u64::from(u16::from_ne_bytes(s.try_into().ok()?)),
        4 => u64::from(u32::from_ne_bytes(s.try_into().ok()?)),
        8 => u64::from_ne_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

/// What was malformed in a page of trace_pipe_raw (offsets are within the page's data).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadPage {
    #[error("page shorter than its header")]
    Short,
    #[error("commit {commit} runs past the page ({len} bytes)")]
    CommitPast { commit: usize, len: usize },
    #[error("event header cut at {0}")]
    HeaderCut(usize),
    #[error("event at {at} ({len} bytes) runs past the commit")]
    EventPast { at: usize, len: usize },
    #[error("event at {at} has length {len}")]
    Length { at: usize, len: usize },
}

/// Decodes one page read from trace_pipe_raw. Err names what was malformed (a record running past the commit).
pub(crate) fn page<'a>(b: &'a [u8], h: &PageHeader) -> Result<Page<'a>, BadPage> {
    let mut ts = u64_at(b, 0).ok_or(BadPage::Short)?;
    let commit_word = uint(b, h.commit_offset, h.commit_size).ok_or(BadPage::Short)?;
    let commit = (commit_word & (MISSED_STORED - 1)) as usize;
    let data = b
        .get(h.data_offset..h.data_offset + commit)
        .ok_or(BadPage::CommitPast {
            commit,
            len: b.len(),
        })?;
    let lost = (commit_word & MISSED_EVENTS != 0).then(|| {
        if commit_word & MISSED_STORED != 0 {
            uint(b, h.data_offset + commit, h.commit_size).unwrap_or(0)
        } else {
            0
        }
    });
    let mut records = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let head = u32_at(data, at).unwrap_or(0);
        let (type_len, delta) = (head & 0x1f, u64::from(head >> 5));
        let array0 = || u32_at(data, at + 4).ok_or(BadPage::HeaderCut(at));
        let len = match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                4 + array0()? as usize
            }
            TYPE_TIME_EXTEND => {
                ts += (u64::from(array0()?) << 27) | delta;
                8
            }
            TYPE_TIME_STAMP => {
                ts = ((u64::from(array0()?) << 27) | delta) | (ts & TS_MSB);
                8
            }
            0 => {
                let n = array0()? as usize;
                ts += delta;
                let body = data
                    .get(at + 8..at + 4 + n)
                    .ok_or(BadPage::EventPast { at, len: n })?;
                records.push(Record { ts, data: body });
                4 + n
            }
            n => {
                ts += delta;
                let n = n as usize * 4;
                let body = data
                    .get(at + 4..at + 4 + n)
                    .ok_or(BadPage::EventPast { at, len: n })?;
                records.push(Record { ts, data: body });
                4 + n
            }
        };
        if len < 4 {
            return Err(BadPage::Length { at, len });
        }
        at += len;
    }
    Ok(Page { lost, records })
}

#[cfg(test)]
mod tests;
