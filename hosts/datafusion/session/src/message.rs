// SPDX-License-Identifier: Apache-2.0
//! The one-line text of a DataFusion error, as the `qlink` tool prints it
//! and the Flight SQL server sends it in a status.

use datafusion::error::DataFusionError;

/// The one-line message of a DataFusion error, without its nesting: the
/// root error's text, prefixed "Resources exhausted: " (DataFusion's
/// wording) or "not supported: " for those kinds, and a missing object
/// store named by its URL.
pub fn one_line(e: &DataFusionError) -> String {
    if let Some(msg) = unreachable_store(e) {
        return msg;
    }
    match e.find_root() {
        DataFusionError::ResourcesExhausted(m) => format!("Resources exhausted: {m}"),
        DataFusionError::Execution(m) => m.clone(),
        DataFusionError::Plan(m) => m.clone(),
        DataFusionError::NotImplemented(m) => format!("not supported: {m}"),
        root => root.to_string(),
    }
}

/// DataFusion's "No suitable object store found for URL" said in the
/// session's terms: which URLs its registry reads.
fn unreachable_store(e: &DataFusionError) -> Option<String> {
    const MARK: &str = "No suitable object store found for ";
    let text = e.to_string();
    let at = text.find(MARK)? + MARK.len();
    let url = text[at..].split(|c: char| c.is_whitespace()).next().unwrap_or("").trim_end_matches('.');
    Some(format!(
        "no object store is registered for '{url}' in the qlink CLI (it reads local paths, http(s):// URLs and public gs:// or s3:// buckets)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kind_and_the_missing_store() {
        let e = DataFusionError::Context("ctx".into(), Box::new(DataFusionError::ResourcesExhausted("pool full".into())));
        assert_eq!(one_line(&e), "Resources exhausted: pool full");
        assert_eq!(one_line(&DataFusionError::NotImplemented("x".into())), "not supported: x");
        let e = DataFusionError::Execution("No suitable object store found for ftp://h/p. See ...".into());
        assert_eq!(
            one_line(&e),
            "no object store is registered for 'ftp://h/p' in the qlink CLI (it reads local paths, http(s):// URLs and public gs:// or s3:// buckets)"
        );
    }
}
