// SPDX-License-Identifier: Apache-2.0
//! A caught panic as the text of a `ql_error` (both sides catch every panic
//! at the ABI and report QL_EINTERNAL with it).

/// The message of a panic's payload: the `&str` or `String` given to
/// `panic!`, else "unknown panic".
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn payloads() {
        assert_eq!(panic_message(&*std::panic::catch_unwind(|| panic!("static")).unwrap_err()), "static");
        assert_eq!(panic_message(&*std::panic::catch_unwind(|| panic!("{}", 7)).unwrap_err()), "7");
        assert_eq!(panic_message(&*std::panic::catch_unwind(|| std::panic::panic_any(3u8)).unwrap_err()), "unknown panic");
    }
}
