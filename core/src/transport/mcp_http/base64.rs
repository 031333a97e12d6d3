//! Standard Base64 (RFC 4648, with padding), for the `=?base64?…?=` header values of MCP
//! 2026-07-28 (`Mcp-Name`, `Mcp-Param-*`): a few lines, not a dependency.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(super) fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `None` for anything but well-formed, padded Base64.
pub(super) fn decode(input: &[u8]) -> Option<Vec<u8>> {
    if !input.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    for (index, chunk) in input.chunks(4).enumerate() {
        let last = index == input.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            let v = ALPHABET.iter().position(|a| *a == c)? as u32;
            n = (n << 6) | v;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_examples_round_trip() {
        // The encoding table of MCP 2026-07-28's Streamable HTTP page.
        for (plain, coded) in [
            ("Hello, 世界", "SGVsbG8sIOS4lueVjA=="),
            (" padded ", "IHBhZGRlZCA="),
            ("line1\nline2", "bGluZTEKbGluZTI="),
            ("=?base64?literal?=", "PT9iYXNlNjQ/bGl0ZXJhbD89"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded.as_bytes()).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(decode(b"abc"), None);
        assert_eq!(decode(b"ab=c"), None);
        assert_eq!(decode(b"a===").map(|_| ()), None);
        assert_eq!(decode(b"YQ==YQ=="), None);
    }
}
