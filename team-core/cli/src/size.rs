//! Sizes on the command line (`--max-size`, `--audit-max-size`, `TEAM_AUDIT_MAX_SIZE`): bytes,
//! or a number with `K`, `M` or `G` (KiB, MiB, GiB).

/// Parses a size: `1048576`, `512K`, `64M`, `1G` (also `KiB`/`KB`, ...; no unit or `B`:
/// bytes). The error names the text and what is wrong with it.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (bytes, or a number with K, M or G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M or G)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_and_their_errors() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("64 MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("ten").unwrap_err().contains("not a size"));
        assert!(parse_size("5T").unwrap_err().contains("unknown unit"));
        assert!(
            parse_size("99999999999999999G")
                .unwrap_err()
                .contains("too large")
        );
    }
}
