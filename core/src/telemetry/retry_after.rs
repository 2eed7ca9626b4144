//! Reading an HTTP `Retry-After` header (RFC 9110, section 10.2.3): a number of
//! seconds, or an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).

/// The delay `value` asks for, in milliseconds from `now_ms` (milliseconds since
/// the Unix epoch), or `None` when it is neither form. A date in the past is no
/// delay.
///
/// ```
/// use webgpu_guard_core::telemetry::retry_after::delay_ms;
/// assert_eq!(delay_ms("120", 0.0), Some(120_000));
/// let now = 784_111_777_000.0; // Sun, 06 Nov 1994 08:49:37 GMT
/// assert_eq!(delay_ms("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(10_000));
/// assert_eq!(delay_ms("soon", now), None);
/// ```
pub fn delay_ms(value: &str, now_ms: f64) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = value.parse().unwrap_or(u64::MAX);
        return Some(seconds.saturating_mul(1000));
    }
    let at_ms = http_date_ms(value)?;
    Some((at_ms - now_ms).max(0.0) as u64)
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), in milliseconds since the
/// Unix epoch. The obsolete forms are not read: servers must send this one.
fn http_date_ms(value: &str) -> Option<f64> {
    let (_, rest) = value.split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = parts.next()?;
    let year: i64 = parts.next()?.parse().ok()?;
    if !(1970..=9999).contains(&year) {
        return None;
    }
    let time = parts.next()?;
    if parts.next()? != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as u32 + 1;
    let mut clock = time.split(':').map(|p| p.parse::<u32>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    if clock.next().is_some() || day == 0 || day > 31 || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Some(seconds as f64 * 1000.0)
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_dates_are_read_and_garbage_is_not() {
        assert_eq!(delay_ms("0", 5.0), Some(0));
        assert_eq!(delay_ms(" 3 ", 5.0), Some(3000));
        assert_eq!(delay_ms("99999999999999999999999", 0.0), Some(u64::MAX));
        assert_eq!(delay_ms("-1", 0.0), None);
        assert_eq!(delay_ms("1.5", 0.0), None);
        assert_eq!(delay_ms("", 0.0), None);
        // 2026-12-02T12:00:00Z is 1_796_212_800 s after the epoch.
        let noon = 1_796_212_800_000.0;
        assert_eq!(http_date_ms("Wed, 02 Dec 2026 12:00:00 GMT"), Some(noon));
        assert_eq!(
            delay_ms("Wed, 02 Dec 2026 12:00:30 GMT", noon),
            Some(30_000)
        );
        assert_eq!(delay_ms("Wed, 02 Dec 2026 11:00:00 GMT", noon), Some(0));
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0.0));
        assert_eq!(
            http_date_ms("Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400_000.0)
        );
        assert_eq!(delay_ms("Wed, 02 Dec 2026 12:00:00 UTC", noon), None);
        assert_eq!(delay_ms("Wed, 02 Foo 2026 12:00:00 GMT", noon), None);
        assert_eq!(delay_ms("Wed, 02 Dec 2026 25:00:00 GMT", noon), None);
        assert_eq!(delay_ms("Wednesday, 02-Dec-26 12:00:00 GMT", noon), None);
        // A year no arithmetic can overflow on.
        assert_eq!(
            delay_ms("Sun, 06 Nov 999999999999 08:49:37 GMT", noon),
            None
        );
        assert_eq!(delay_ms("Sun, 06 Nov 1969 08:49:37 GMT", noon), None);
    }
}
