//! Checks of what a person types in the console, as plain Rust: every function
//! reachable from JavaScript converts its arguments to these shapes first and
//! answers a wrong or missing argument with one usage line, changing nothing.

use webgpu_guard::chaos::{Injection, INJECTION_USAGE};

/// A value as it came from JavaScript, reduced to what the checks need.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `undefined` or no argument.
    Missing,
    /// A number (possibly NaN or infinite).
    Number(f64),
    /// A string.
    Text(String),
    /// Anything else (`null`, an object, a boolean...), described.
    Other(String),
}

impl Arg {
    fn describe(&self) -> String {
        match self {
            Arg::Missing => "nothing".into(),
            Arg::Number(n) => format!("the number {}", number_text(*n)),
            Arg::Text(t) => format!("the string \"{t}\""),
            Arg::Other(what) => what.clone(),
        }
    }
}

/// A number as JavaScript would mostly write it, to six decimals at most, without
/// Rust's float formatting (which would add about 13 KB to the demo's `.wasm`).
pub fn number_text(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    let magnitude = n.abs();
    if magnitude >= 1e15 {
        return format!("{sign}{}e{}", (magnitude / 10f64.powi(15)) as u64, 15);
    }
    let millionths = (magnitude * 1e6).round() as u64;
    let (whole, fraction) = (millionths / 1_000_000, millionths % 1_000_000);
    if fraction == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{fraction:06}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

/// The usage line of `gpuCamera`.
pub const CAMERA_USAGE: &str =
    "usage: gpuCamera(yaw, pitch, distance) with finite numbers (radians, radians, 4 to 60)";

/// A checked camera: finite yaw, pitch clamped to 0.05..1.45, distance to 4..60.
pub fn camera(yaw: &Arg, pitch: &Arg, distance: &Arg) -> Result<(f32, f32, f32), String> {
    let number = |name: &str, arg: &Arg| match arg {
        Arg::Number(n) if n.is_finite() => Ok(*n),
        other => Err(format!("{CAMERA_USAGE}; {name} was {}", other.describe())),
    };
    let yaw = number("yaw", yaw)?;
    let pitch = number("pitch", pitch)?;
    let distance = number("distance", distance)?;
    Ok((
        (yaw % std::f64::consts::TAU) as f32,
        pitch.clamp(0.05, 1.45) as f32,
        distance.clamp(4.0, 60.0) as f32,
    ))
}

/// One word out of `allowed`, or the usage line naming them.
pub fn word<'a>(function: &str, arg: &Arg, allowed: &[&'a str]) -> Result<&'a str, String> {
    let usage = || {
        let list: Vec<String> = allowed.iter().map(|w| format!("\"{w}\"")).collect();
        format!(
            "usage: {function}(kind) with kind one of {}",
            list.join(", ")
        )
    };
    match arg {
        Arg::Text(text) => allowed
            .iter()
            .find(|w| **w == text.as_str())
            .copied()
            .ok_or_else(|| format!("{}; got {}", usage(), arg.describe())),
        other => Err(format!("{}; got {}", usage(), other.describe())),
    }
}

/// A whole number in `min..=max`, or the usage line.
pub fn count(function: &str, name: &str, arg: &Arg, min: u64, max: u64) -> Result<u64, String> {
    match arg {
        Arg::Number(n)
            if n.is_finite() && n.fract() == 0.0 && *n >= min as f64 && *n <= max as f64 =>
        {
            Ok(*n as u64)
        }
        other => Err(format!(
            "usage: {function}: {name} must be a whole number from {min} to {max}; got {}",
            other.describe()
        )),
    }
}

/// A checked `gpuInject(spec)`: the spec as [`Injection::parse`] reads it, its
/// numbers within their bounds. Every refusal is one line that starts with
/// [`INJECTION_USAGE`], so the console can show it as it is.
pub fn injection(spec: &Arg) -> Result<Injection, String> {
    match spec {
        Arg::Text(text) => Injection::parse(text),
        other => Err(format!("{INJECTION_USAGE}; got {}", other.describe())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injections_are_checked_and_refused_with_the_usage_line() {
        assert_eq!(
            injection(&Arg::Text("storm:1000:500".into())),
            Ok(Injection::Storm {
                per_second: 1000,
                for_ms: 500
            })
        );
        for bad in [
            Arg::Text("storm:4294967295:1000".into()),
            Arg::Text("storm:1e9:1e9".into()),
            Arg::Text("lose-after-frames:0".into()),
            Arg::Number(3.0),
            Arg::Missing,
            Arg::Other("null".into()),
        ] {
            let error = injection(&bad).unwrap_err();
            assert!(error.starts_with(INJECTION_USAGE), "{error}");
            assert!(!error[INJECTION_USAGE.len()..].contains("usage"), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
        assert_eq!(
            injection(&Arg::Number(3.0)).unwrap_err(),
            format!("{INJECTION_USAGE}; got the number 3")
        );
    }

    #[test]
    fn the_camera_refuses_what_is_not_a_finite_number() {
        let n = Arg::Number;
        assert_eq!(camera(&n(0.5), &n(0.4), &n(12.0)), Ok((0.5, 0.4, 12.0)));
        for bad in [
            (Arg::Text("a".into()), n(0.4), n(12.0)),
            (n(0.5), Arg::Other("null".into()), n(12.0)),
            (n(0.5), n(0.4), Arg::Missing),
            (n(f64::NAN), n(0.4), n(12.0)),
            (n(0.5), n(f64::INFINITY), n(12.0)),
        ] {
            let error = camera(&bad.0, &bad.1, &bad.2).unwrap_err();
            assert!(error.starts_with(CAMERA_USAGE), "{error}");
            assert!(!error.contains('\n'));
        }
        let (yaw, pitch, distance) = camera(&n(1e9), &n(-3.0), &n(1e6)).unwrap();
        assert!(yaw.is_finite() && yaw.abs() < 6.3);
        assert_eq!((pitch, distance), (0.05, 60.0));
    }

    #[test]
    fn words_and_counts_answer_with_one_usage_line() {
        let kinds = ["validation", "storm"];
        assert_eq!(
            word("gpuFault", &Arg::Text("storm".into()), &kinds),
            Ok("storm")
        );
        let error = word("gpuFault", &Arg::Number(42.0), &kinds).unwrap_err();
        assert_eq!(
            error,
            "usage: gpuFault(kind) with kind one of \"validation\", \"storm\"; got the number 42"
        );
        assert!(word("gpuFault", &Arg::Missing, &kinds)
            .unwrap_err()
            .contains("got nothing"));
        assert_eq!(
            count("gpuChaos", "count", &Arg::Number(5.0), 1, 1000),
            Ok(5)
        );
        assert!(count("gpuChaos", "count", &Arg::Number(5.5), 1, 1000).is_err());
        assert!(count("gpuChaos", "count", &Arg::Number(-1.0), 1, 1000).is_err());
        assert!(count("gpuChaos", "count", &Arg::Text("5".into()), 1, 1000).is_err());
    }

    #[test]
    fn numbers_are_written_as_javascript_mostly_writes_them() {
        for (n, text) in [
            (42.0, "42"),
            (-3.0, "-3"),
            (0.5, "0.5"),
            (-0.25, "-0.25"),
            (1.0 / 3.0, "0.333333"),
            (0.0, "0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (2e15, "2e15"),
        ] {
            assert_eq!(number_text(n), text, "{n}");
        }
    }
}
