// SPDX-License-Identifier: Apache-2.0
//! Plugin functions on workers.
//!
//! datafusion-distributed sends a function call by name, and a worker's
//! decoder looks the name up in its session's function registry
//! (datafusion-proto: an empty `fun_definition` means "by name", and the
//! composed codec consults datafusion-distributed's own codec first, so
//! qlink's codec never sees a call). So the coordinator names, in every
//! query it sends, the plugins whose functions its session registered: a
//! config extension ([`ShippedPlugins`]) that datafusion-distributed
//! carries in the request's gRPC metadata. Before the plan is decoded, a
//! worker loads the same builds ([`PluginLoader`]: name, version, ABI
//! version and file digest checked) and registers their scalar, aggregate
//! and window functions under the same names. A listed plugin the worker
//! cannot load (missing, or another build) gets stand-ins under its
//! functions' names that fail with the loader's message, so only a query
//! calling one of them fails, and its error says why.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::extensions_options;
use datafusion::config::ConfigExtension;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{FunctionRegistry, SessionState};
use datafusion::logical_expr::function::{AccumulatorArgs, PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, PartitionEvaluator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility, WindowUDF, WindowUDFImpl,
};
use datafusion::prelude::SessionContext;
use url::form_urlencoded;

use crate::distributed::codec::PluginLoader;
use crate::distributed::plugin_identity::PluginIdentity;
use crate::functions::PluginFunction;
use crate::plugin::Plugin;

extensions_options! {
    /// The plugins whose functions a coordinator's session registered,
    /// sent to the workers with each query.
    pub struct ShippedPlugins {
        /// Entries joined by ',', each form-urlencoded: `name`, `version`,
        /// `abi`, `digest` (16 hex digits), `path`, then one `scalar`,
        /// `aggregate` or `window` pair per function (a table function is
        /// called where the query is planned; its scan crosses as a
        /// recipe).
        pub plugins: String, default = String::new()
    }
}

impl ConfigExtension for ShippedPlugins {
    const PREFIX: &'static str = "qlink";
}

/// A function kind a worker registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Scalar,
    Aggregate,
    Window,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Scalar => "scalar",
            Kind::Aggregate => "aggregate",
            Kind::Window => "window",
        }
    }
}

/// One entry of [`ShippedPlugins::plugins`].
#[derive(Clone, Debug, PartialEq)]
struct Shipped {
    id: PluginIdentity,
    functions: Vec<(Kind, String)>,
}

impl Shipped {
    fn encode(&self) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        s.append_pair("name", &self.id.name)
            .append_pair("version", &self.id.version)
            .append_pair("abi", &self.id.abi_version.to_string())
            .append_pair("digest", &format!("{:016x}", self.id.digest))
            .append_pair("path", &self.id.path);
        for (kind, name) in &self.functions {
            s.append_pair(kind.key(), name);
        }
        s.finish()
    }

    fn parse(entry: &str) -> Result<Shipped> {
        let bad = |what: &str| DataFusionError::Plan(format!("qlink.plugins from the coordinator: {what} in '{entry}'"));
        let mut id = PluginIdentity { name: String::new(), version: String::new(), abi_version: 0, path: String::new(), digest: 0 };
        let mut functions = Vec::new();
        for (k, v) in form_urlencoded::parse(entry.as_bytes()) {
            match k.as_ref() {
                "name" => id.name = v.into_owned(),
                "version" => id.version = v.into_owned(),
                "abi" => id.abi_version = v.parse().map_err(|_| bad("a bad abi"))?,
                "digest" => id.digest = u64::from_str_radix(&v, 16).map_err(|_| bad("a bad digest"))?,
                "path" => id.path = v.into_owned(),
                "scalar" => functions.push((Kind::Scalar, v.into_owned())),
                "aggregate" => functions.push((Kind::Aggregate, v.into_owned())),
                "window" => functions.push((Kind::Window, v.into_owned())),
                other => return Err(bad(&format!("an unknown key '{other}'"))),
            }
        }
        if id.name.is_empty() || id.path.is_empty() {
            return Err(bad("no plugin name or path"));
        }
        Ok(Shipped { id, functions })
    }
}

impl ShippedPlugins {
    /// Name `plugin` and its `functions` in `ctx`'s session, when that
    /// session is a coordinator's (it has this extension); else nothing.
    pub fn note(ctx: &SessionContext, plugin: &Plugin, functions: &[PluginFunction]) -> Result<()> {
        let state = ctx.state_ref();
        let mut state = state.write();
        let Some(ext) = state.config_mut().options_mut().extensions.get_mut::<ShippedPlugins>() else {
            return Ok(());
        };
        let shipped = Shipped {
            id: PluginIdentity::of(plugin)?,
            functions: functions
                .iter()
                .filter_map(|f| match f {
                    PluginFunction::Scalar(u) => Some((Kind::Scalar, u.name().to_string())),
                    PluginFunction::Aggregate(u) => Some((Kind::Aggregate, u.name().to_string())),
                    PluginFunction::Window(u) => Some((Kind::Window, u.name().to_string())),
                    PluginFunction::Table(..) => None,
                })
                .collect(),
        };
        let entry = shipped.encode();
        if !ext.plugins.split(',').any(|e| e == entry) {
            if !ext.plugins.is_empty() {
                ext.plugins.push(',');
            }
            ext.plugins.push_str(&entry);
        }
        Ok(())
    }

    fn entries(&self) -> Result<Vec<Shipped>> {
        self.plugins.split(',').filter(|e| !e.is_empty()).map(Shipped::parse).collect()
    }
}

/// Register, in a worker's `state`, the functions of every plugin its
/// [`ShippedPlugins`] names (see the module's documentation).
pub fn register_shipped(state: &mut SessionState, loader: &PluginLoader) -> Result<()> {
    let entries = match state.config().options().extensions.get::<ShippedPlugins>() {
        Some(ext) => ext.entries()?,
        None => return Ok(()),
    };
    for entry in entries {
        match loader.functions_for(&entry.id) {
            Ok(functions) => {
                for f in functions.iter() {
                    match f {
                        PluginFunction::Scalar(u) => {
                            state.register_udf(Arc::new(u.clone()))?;
                        }
                        PluginFunction::Aggregate(u) => {
                            state.register_udaf(Arc::new(u.clone()))?;
                        }
                        PluginFunction::Window(u) => {
                            state.register_udwf(Arc::new(u.clone()))?;
                        }
                        PluginFunction::Table(..) => continue,
                    };
                }
            }
            Err(e) => {
                let reason = match &e {
                    DataFusionError::Plan(m) => m.clone(),
                    other => other.to_string(),
                };
                for (kind, name) in entry.functions {
                    let stand_in = Unavailable::new(name, &reason);
                    match kind {
                        Kind::Scalar => {
                            state.register_udf(Arc::new(ScalarUDF::new_from_impl(stand_in)))?;
                        }
                        Kind::Aggregate => {
                            state.register_udaf(Arc::new(AggregateUDF::new_from_impl(stand_in)))?;
                        }
                        Kind::Window => {
                            state.register_udwf(Arc::new(WindowUDF::new_from_impl(stand_in)))?;
                        }
                    };
                }
            }
        }
    }
    Ok(())
}

/// A function a worker could not load: every use fails with the reason.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Unavailable {
    name: String,
    message: String,
    signature: Signature,
}

impl Unavailable {
    fn new(name: String, reason: &str) -> Unavailable {
        let message = format!("{name}: {reason}");
        Unavailable { name, message, signature: Signature::variadic_any(Volatility::Volatile) }
    }

    fn fail<T>(&self) -> Result<T> {
        Err(DataFusionError::Plan(self.message.clone()))
    }
}

impl ScalarUDFImpl for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        self.fail()
    }
    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.fail()
    }
}

impl AggregateUDFImpl for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        self.fail()
    }
    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.fail()
    }
}

impl WindowUDFImpl for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn partition_evaluator(&self, _: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        self.fail()
    }
    fn field(&self, _: WindowUDFFieldArgs) -> Result<FieldRef> {
        self.fail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_through_its_text() {
        let s = Shipped {
            id: PluginIdentity {
                name: "qlink_sample".into(),
                version: "0.1.0".into(),
                abi_version: 0x100,
                path: "/opt/plug ins/a,b&c=d.so".into(),
                digest: 0x0123_4567_89ab_cdef,
            },
            functions: vec![(Kind::Scalar, "add_one".into()), (Kind::Aggregate, "sum_sq".into())],
        };
        let text = s.encode();
        assert!(!text.contains(',') && text.is_ascii(), "{text}");
        assert_eq!(Shipped::parse(&text).unwrap(), s);
        let e = Shipped::parse("name=x&path=/p&colour=red").unwrap_err().to_string();
        assert!(e.contains("an unknown key 'colour'"), "{e}");
        let e = Shipped::parse("name=x&path=/p&digest=zz").unwrap_err().to_string();
        assert!(e.contains("a bad digest"), "{e}");
    }
}
