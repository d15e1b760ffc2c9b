// SPDX-License-Identifier: Apache-2.0
//! `qlink serve`: an Arrow Flight SQL server over the session `qlink sql`
//! builds (the same `--plugin`, `--table`, `--schema`, `--planner` and
//! `--memory-limit`), so any Flight SQL client (ADBC's driver, the JDBC
//! and ODBC drivers) queries plugin tables.
//!
//! What it answers: statement queries (`CommandStatementQuery`: a
//! FlightInfo whose one ticket `DoGet` streams), prepared statements
//! (create, bind one row of `$1`.. parameters, execute, close), the
//! catalog, schema, table and table-type listings, and `GetSqlInfo`
//! (server name, version, read-only); and plain Flight path descriptors
//! (`table`, `schema.table`, or a query as the path), which clients
//! without Flight SQL send. The rest of Flight SQL (updates, ingestion,
//! Substrait, transactions) is refused as UNIMPLEMENTED.
//!
//! Its SQL is read-only: DDL (`CREATE EXTERNAL TABLE`, `DROP`), DML
//! (`INSERT`, `COPY`) and statements (`SET`) are refused, so a client sends
//! queries over the tables the operator registered and nothing else; no
//! request names a plugin or a path (plugins come from the command line
//! only, before the server listens).
//!
//! State: none per client. A statement's ticket and a prepared statement's
//! handle carry the SQL itself (and a prepared statement's bound parameters
//! as an Arrow IPC stream), so a client that never closes its statements
//! holds nothing on the server, and each `DoGet` plans its query anew.
//!
//! Authentication: with a secret (`--secret-file` or `QLINK_SECRET`), every
//! call must carry `authorization: Bearer SECRET`, compared in constant time
//! by the workers' check (`Secret::admits`) before the call reaches the
//! service; without one only a loopback address may be bound.
//!
//! A result streams as DataFusion computes it; a client that goes away
//! mid-stream drops the stream, which cancels the query (its tasks stop at
//! their next yield) and prints one line on stderr.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, Any,
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandPreparedStatementQuery,
    CommandStatementQuery, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{FlightDescriptor, FlightEndpoint, FlightInfo, IpcMessage, SchemaAsIpc, Ticket};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::sqlparser::parser::ParserError;
use futures::{Stream, StreamExt, TryStreamExt};
use prost::Message;
use qlink_datafusion::distributed::{Secret, SECRET_ENV};
use qlink_datafusion::QlinkSession;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

use crate::message::one_line as df_message;

/// Where and how the server listens: `port` 0 lets the system choose;
/// `secret` None serves without authentication (loopback only, see
/// [`check_bind`]).
pub struct ServeOptions {
    pub host: IpAddr,
    pub port: u16,
    pub secret: Option<Secret>,
}

/// The refusal of a non-loopback address without a secret (a usage error).
pub fn check_bind(host: &IpAddr, secret: &Option<Secret>) -> Result<(), String> {
    check_bind_as(
        host,
        secret,
        "serve --host",
        &format!("the clients' secret (--secret-file FILE or {SECRET_ENV}; e.g. `openssl rand -hex 32 > FILE`)"),
    )
}

/// [`check_bind`] in the caller's terms: the error reads "`option` HOST is
/// not a loopback address: a server other machines can reach needs
/// `remedy`" (the Python package names its `secret=` argument).
pub fn check_bind_as(host: &IpAddr, secret: &Option<Secret>, option: &str, remedy: &str) -> Result<(), String> {
    if secret.is_none() && !host.is_loopback() {
        return Err(format!("{option} {host} is not a loopback address: a server other machines can reach needs {remedy}"));
    }
    Ok(())
}

/// Serves `session` until the process ends. Prints one line on stdout once
/// the port is open (`qlink serve: Flight SQL on grpc://ADDR:PORT`, the
/// port the system chose when `port` is 0), for scripts and tests to wait on.
pub async fn serve(session: QlinkSession, opts: ServeOptions) -> Result<(), DataFusionError> {
    let listener = bind(&opts).await?;
    println!("qlink serve: Flight SQL on {}", url(&listener.local_addr().map_err(|e| listen_error(&opts, e))?));
    std::io::stdout().flush().ok();
    serve_on(listener, session, opts.secret, std::future::pending()).await
}

/// Opens the listening socket `opts` names (not yet serving). Errors:
/// "cannot listen on ADDR: REASON" (port in use, address not local).
/// [`check_bind`] is the caller's: this does not refuse a public address.
pub async fn bind(opts: &ServeOptions) -> Result<tokio::net::TcpListener, DataFusionError> {
    tokio::net::TcpListener::bind(SocketAddr::new(opts.host, opts.port)).await.map_err(|e| listen_error(opts, e))
}

fn listen_error(opts: &ServeOptions, e: std::io::Error) -> DataFusionError {
    DataFusionError::Plan(format!("cannot listen on {}: {e}", SocketAddr::new(opts.host, opts.port)))
}

/// The server's address as a client names it: `grpc://HOST:PORT`, an IPv6
/// host in brackets.
pub fn url(bound: &SocketAddr) -> String {
    let host = if bound.is_ipv6() { format!("[{}]", bound.ip()) } else { bound.ip().to_string() };
    format!("grpc://{host}:{}", bound.port())
}

/// Serves `session` on `listener` until `shutdown` completes (then stops
/// accepting, lets calls in flight finish, and returns Ok). With `secret`
/// every call must carry it. The session (and so the plugins its tables
/// call) is released when this returns.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    session: QlinkSession,
    secret: Option<Secret>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), DataFusionError> {
    let service = FlightServiceServer::new(QlinkFlightSql::new(session)?);
    Server::builder()
        .layer(tonic::service::InterceptorLayer::new(ClientSecret(secret)))
        .add_service(service)
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown)
        .await
        .map_err(|e| DataFusionError::Execution(format!("the Flight SQL server stopped: {e}")))
}

/// The server's check of each call: with a secret, a call without
/// `authorization: Bearer SECRET` is refused as UNAUTHENTICATED before it
/// reaches the service (the workers' constant-time comparison).
#[derive(Clone)]
struct ClientSecret(Option<Secret>);

impl tonic::service::Interceptor for ClientSecret {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(secret) = &self.0 else { return Ok(req) };
        let header = req.metadata().get("authorization").map(|v| v.as_bytes());
        if secret.admits(header) {
            return Ok(req);
        }
        let why = if header.is_none() { "carries no secret" } else { "carries a wrong secret" };
        Err(Status::unauthenticated(format!(
            "qlink serve: the call {why}; send the server's secret as the header 'authorization: Bearer SECRET'"
        )))
    }
}

/// Read-only SQL: queries only, no DDL, DML or SET.
fn read_only() -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

/// A DataFusion error as a Flight status: bad SQL and plans are
/// INVALID_ARGUMENT, a missing table or column NOT_FOUND, an unsupported
/// feature UNIMPLEMENTED, an exhausted memory pool RESOURCE_EXHAUSTED, the
/// rest (a plugin's error while reading) INTERNAL; each with the one-line
/// message `qlink sql` prints.
fn status(e: &DataFusionError) -> Status {
    let msg = df_message(e);
    match e.find_root() {
        DataFusionError::SQL(err, _) if matches!(**err, ParserError::ParserError(_) | ParserError::TokenizerError(_)) => {
            Status::invalid_argument(msg)
        }
        DataFusionError::SchemaError(..) => Status::not_found(msg),
        DataFusionError::Plan(m) if m.starts_with("table '") && m.ends_with("' not found") => Status::not_found(msg),
        DataFusionError::Plan(_) | DataFusionError::SQL(..) => Status::invalid_argument(msg),
        DataFusionError::NotImplemented(_) => Status::unimplemented(msg),
        DataFusionError::ResourcesExhausted(_) => Status::resource_exhausted(msg),
        _ => Status::internal(msg),
    }
}

fn arrow_status(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

/// The Arrow IPC form of a schema, as FlightInfo and prepared statements carry it.
fn ipc_schema(schema: &Schema) -> Result<Bytes, Status> {
    let IpcMessage(bytes) = SchemaAsIpc::new(schema, &IpcWriteOptions::default()).try_into().map_err(arrow_status)?;
    Ok(bytes)
}

/// A prepared statement's handle: a tag, the SQL's length (u32, little
/// endian), the SQL, then the bound parameters as an Arrow IPC stream
/// (nothing when none are bound).
const HANDLE_TAG: &[u8] = b"qlink-prepared-1:";

fn encode_handle(sql: &str, params: Option<&RecordBatch>) -> Result<Bytes, Status> {
    let mut out = Vec::with_capacity(HANDLE_TAG.len() + 4 + sql.len());
    out.extend_from_slice(HANDLE_TAG);
    out.extend_from_slice(&(sql.len() as u32).to_le_bytes());
    out.extend_from_slice(sql.as_bytes());
    if let Some(batch) = params {
        let mut w = StreamWriter::try_new(&mut out, &batch.schema()).map_err(arrow_status)?;
        w.write(batch).map_err(arrow_status)?;
        w.finish().map_err(arrow_status)?;
    }
    Ok(out.into())
}

fn decode_handle(handle: &[u8]) -> Result<(String, Option<RecordBatch>), Status> {
    let unknown = || Status::not_found("qlink serve: not a prepared statement handle of this server");
    let rest = handle.strip_prefix(HANDLE_TAG).ok_or_else(unknown)?;
    let len = u32::from_le_bytes(rest.get(..4).ok_or_else(unknown)?.try_into().unwrap()) as usize;
    let sql = rest.get(4..4 + len).ok_or_else(unknown)?;
    let sql = String::from_utf8(sql.to_vec()).map_err(|_| unknown())?;
    let params = &rest[4 + len..];
    if params.is_empty() {
        return Ok((sql, None));
    }
    let mut reader = StreamReader::try_new(std::io::Cursor::new(params), None).map_err(|_| unknown())?;
    let batch = reader.next().ok_or_else(unknown)?.map_err(|_| unknown())?;
    Ok((sql, Some(batch)))
}

/// Bound parameters as DataFusion's positional values ($1 is the first
/// column): one row only.
fn param_values(batch: &RecordBatch) -> Result<ParamValues, Status> {
    if batch.num_rows() != 1 {
        return Err(Status::unimplemented(format!(
            "qlink serve binds one row of parameters to a prepared query, not {} (execute it once per row)",
            batch.num_rows()
        )));
    }
    let values =
        batch.columns().iter().map(|c| ScalarValue::try_from_array(c, 0).map_err(|e| status(&e))).collect::<Result<Vec<_>, _>>()?;
    Ok(ParamValues::from(values))
}

/// The schema of a plan's placeholders, `$1`, `$2`... in order (type Null
/// where DataFusion cannot infer it).
fn parameter_schema(df: &DataFrame) -> Result<Option<Schema>, Status> {
    let types = df.logical_plan().get_parameter_types().map_err(|e| status(&e))?;
    if types.is_empty() {
        return Ok(None);
    }
    let mut named: Vec<(usize, String, DataType)> = types
        .into_iter()
        .map(|(name, t)| {
            let n = name.trim_start_matches('$').parse::<usize>().unwrap_or(usize::MAX);
            (n, name, t.unwrap_or(DataType::Null))
        })
        .collect();
    named.sort();
    Ok(Some(Schema::new(named.into_iter().map(|(_, name, t)| Field::new(name, t, true)).collect::<Vec<_>>())))
}

/// The Flight SQL service over one session.
struct QlinkFlightSql {
    ctx: SessionContext,
    // Keeps the plugins the session's tables and functions call loaded.
    _session: QlinkSession,
    sql_info: SqlInfoData,
    next_query: AtomicU64,
}

impl QlinkFlightSql {
    fn new(session: QlinkSession) -> Result<QlinkFlightSql, DataFusionError> {
        let mut info = SqlInfoDataBuilder::new();
        info.append(SqlInfo::FlightSqlServerName, "qlink");
        info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
        info.append(SqlInfo::FlightSqlServerArrowVersion, "59.3.2");
        info.append(SqlInfo::FlightSqlServerReadOnly, true);
        info.append(SqlInfo::FlightSqlServerSql, true);
        info.append(SqlInfo::FlightSqlServerSubstrait, false);
        info.append(SqlInfo::FlightSqlServerTransaction, 0i32); // SQL_SUPPORTED_TRANSACTION_NONE
        info.append(SqlInfo::FlightSqlServerCancel, false);
        info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
        let sql_info = info.build().map_err(|e| DataFusionError::Internal(format!("Flight SQL server info: {e}")))?;
        Ok(QlinkFlightSql { ctx: session.ctx.clone(), _session: session, sql_info, next_query: AtomicU64::new(1) })
    }

    /// `sql` planned as a read-only query, with `params` bound when given.
    async fn plan(&self, sql: &str, params: Option<&RecordBatch>) -> Result<DataFrame, Status> {
        let df = self.ctx.sql_with_options(sql, read_only()).await.map_err(|e| status(&e))?;
        match params {
            Some(batch) => df.with_param_values(param_values(batch)?).map_err(|e| status(&e)),
            None => Ok(df),
        }
    }

    /// A FlightInfo with `schema` and one endpoint whose ticket is `ticket`
    /// (served by this same server: no location).
    fn info(schema: &Schema, ticket: Any, descriptor: FlightDescriptor) -> Result<Response<FlightInfo>, Status> {
        let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket.encode_to_vec()));
        let info = FlightInfo::new().try_with_schema(schema).map_err(arrow_status)?.with_endpoint(endpoint).with_descriptor(descriptor);
        Ok(Response::new(info))
    }

    /// Runs `df` and streams its batches as Flight data.
    async fn stream(&self, df: DataFrame) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let schema: SchemaRef = Arc::clone(df.schema().inner());
        let id = self.next_query.fetch_add(1, Ordering::Relaxed);
        let inner = df.execute_stream().await.map_err(|e| status(&e))?;
        let watched = Watched { inner, id, batches: 0, done: false };
        let data = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .build(watched.map_err(|e| FlightError::Tonic(Box::new(status(&e)))))
            .map_err(Status::from);
        Ok(Response::new(Box::pin(data)))
    }

    /// A one-batch result as Flight data.
    fn batch(batch: RecordBatch) -> Response<<Self as FlightService>::DoGetStream> {
        let data =
            FlightDataEncoderBuilder::new().with_schema(batch.schema()).build(futures::stream::iter([Ok(batch)])).map_err(Status::from);
        Response::new(Box::pin(data))
    }

    /// Every (catalog, schema, table) of the session, with the table's
    /// type and schema, in name order.
    async fn tables(&self) -> Result<Vec<(String, String, String, &'static str, SchemaRef)>, Status> {
        let mut out = Vec::new();
        let mut catalogs = self.ctx.catalog_names();
        catalogs.sort();
        for c in catalogs {
            let Some(catalog) = self.ctx.catalog(&c) else { continue };
            let mut schemas = catalog.schema_names();
            schemas.sort();
            for s in schemas {
                let Some(schema) = catalog.schema(&s) else { continue };
                let mut names = schema.table_names();
                names.sort();
                for t in names {
                    let Some(table) = schema.table(&t).await.map_err(|e| status(&e))? else { continue };
                    let kind = match table.table_type() {
                        TableType::Base => "BASE TABLE",
                        TableType::View => "VIEW",
                        TableType::Temporary => "LOCAL TEMPORARY",
                    };
                    out.push((c.clone(), s.clone(), t, kind, table.schema()));
                }
            }
        }
        Ok(out)
    }
}

/// A query's batches, noting whether its client read them to the end: a
/// stream dropped before its end (the client went away, or cancelled)
/// cancels the query and says so on stderr.
struct Watched {
    inner: SendableRecordBatchStream,
    id: u64,
    batches: u64,
    done: bool,
}

impl Stream for Watched {
    type Item = Result<RecordBatch, DataFusionError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        match &next {
            Poll::Ready(Some(Ok(_))) => self.batches += 1,
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => self.done = true,
            Poll::Pending => {}
        }
        next
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.done {
            eprintln!("qlink serve: query {} cancelled after {} batches: its client stopped reading", self.id, self.batches);
        }
    }
}

fn like(pattern: &Option<String>) -> Option<String> {
    pattern.clone().filter(|p| !p.is_empty())
}

#[tonic::async_trait]
impl FlightSqlService for QlinkFlightSql {
    type FlightService = QlinkFlightSql;

    /// A plain Flight descriptor (not a Flight SQL command), as clients
    /// without Flight SQL send (ClickHouse's arrowFlight table engine,
    /// pyarrow's `FlightDescriptor.for_path`): a path of one element that
    /// is a query (`SELECT ...`, `WITH ...`) runs it; otherwise the path
    /// names a table, as `table`, `schema.table` or the elements
    /// [`schema`, `table`], each part taken exactly as written (quoted).
    /// Anything else (an unknown command) is the client's error.
    async fn get_flight_info_fallback(
        &self,
        cmd: arrow_flight::sql::Command,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let descriptor = request.into_inner();
        if descriptor.r#type != arrow_flight::flight_descriptor::DescriptorType::Path as i32 || descriptor.path.is_empty() {
            return Err(Status::invalid_argument(format!(
                "qlink serve: not a Flight SQL command ({}) and not a path naming a table or a query",
                cmd.type_url()
            )));
        }
        let sql = path_sql(&descriptor.path)?;
        let df = self.plan(&sql, None).await?;
        let ticket = TicketStatementQuery { statement_handle: sql.into_bytes().into() };
        Self::info(df.schema().as_arrow(), ticket.as_any(), descriptor)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let df = self.plan(&query.query, None).await?;
        let ticket = TicketStatementQuery { statement_handle: query.query.into_bytes().into() };
        Self::info(df.schema().as_arrow(), ticket.as_any(), request.into_inner())
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let sql = std::str::from_utf8(&ticket.statement_handle)
            .map_err(|_| Status::invalid_argument("qlink serve: the statement ticket is not UTF-8 SQL"))?;
        let df = self.plan(sql, None).await?;
        self.stream(df).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let df = self.plan(&query.query, None).await?;
        let parameter_schema = match parameter_schema(&df)? {
            Some(s) => ipc_schema(&s)?,
            None => Bytes::new(),
        };
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: encode_handle(&query.query, None)?,
            dataset_schema: ipc_schema(df.schema().as_arrow())?,
            parameter_schema,
        })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let (sql, _) = decode_handle(&query.prepared_statement_handle)?;
        let data = request.into_inner().map_err(FlightError::from);
        let batches: Vec<RecordBatch> =
            arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(data).try_collect().await.map_err(Status::from)?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let params = match batches.into_iter().find(|b| b.num_rows() > 0) {
            Some(b) if rows == 1 => Some(b),
            None => None,
            Some(_) => {
                return Err(Status::unimplemented(format!(
                    "qlink serve binds one row of parameters to a prepared query, not {rows} (execute it once per row)"
                )))
            }
        };
        // Checked now, so a wrong parameter fails at bind time.
        self.plan(&sql, params.as_ref()).await?;
        Ok(DoPutPreparedStatementResult { prepared_statement_handle: Some(encode_handle(&sql, params.as_ref())?) })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (sql, params) = decode_handle(&cmd.prepared_statement_handle)?;
        let df = self.plan(&sql, params.as_ref()).await?;
        Self::info(df.schema().as_arrow(), cmd.as_any(), request.into_inner())
    }

    async fn do_get_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let (sql, params) = decode_handle(&cmd.prepared_statement_handle)?;
        let df = self.plan(&sql, params.as_ref()).await?;
        self.stream(df).await
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        // The handle holds the statement: nothing to release.
        decode_handle(&query.prepared_statement_handle).map(|_| ())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Self::info(&query.into_builder().schema(), query.as_any(), request.into_inner())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let mut builder = query.into_builder();
        let mut names = self.ctx.catalog_names();
        names.sort();
        for c in names {
            builder.append(c);
        }
        Ok(Self::batch(builder.build().map_err(arrow_status)?))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Self::info(&query.clone().into_builder().schema(), query.as_any(), request.into_inner())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let mut builder =
            arrow_flight::sql::metadata::GetDbSchemasBuilder::new(query.catalog.clone(), like(&query.db_schema_filter_pattern));
        let mut catalogs = self.ctx.catalog_names();
        catalogs.sort();
        for c in catalogs {
            let Some(catalog) = self.ctx.catalog(&c) else { continue };
            let mut schemas = catalog.schema_names();
            schemas.sort();
            for s in schemas {
                builder.append(&c, s);
            }
        }
        Ok(Self::batch(builder.build().map_err(arrow_status)?))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Self::info(&query.clone().into_builder().schema(), query.as_any(), request.into_inner())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let mut builder = arrow_flight::sql::metadata::GetTablesBuilder::new(
            query.catalog.clone(),
            like(&query.db_schema_filter_pattern),
            like(&query.table_name_filter_pattern),
            query.table_types.clone(),
            query.include_schema,
        );
        for (c, s, t, kind, schema) in self.tables().await? {
            builder.append(c, s, t, kind, &schema).map_err(arrow_status)?;
        }
        Ok(Self::batch(builder.build().map_err(arrow_status)?))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Self::info(&query.into_builder().schema(), query.as_any(), request.into_inner())
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let mut builder = query.into_builder();
        for kind in ["BASE TABLE", "LOCAL TEMPORARY", "VIEW"] {
            builder.append(kind);
        }
        Ok(Self::batch(builder.build().map_err(arrow_status)?))
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Self::info(&query.clone().into_builder(&self.sql_info).schema(), query.as_any(), request.into_inner())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        Ok(Self::batch(query.into_builder(&self.sql_info).build().map_err(arrow_status)?))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// The SQL a plain Flight path stands for (see `get_flight_info_fallback`).
fn path_sql(path: &[String]) -> Result<String, Status> {
    if let [only] = path {
        let first = only.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        if first == "select" || first == "with" {
            return Ok(only.clone());
        }
    }
    let parts: Vec<&str> = match path {
        [only] => only.split('.').collect(),
        many => many.iter().map(String::as_str).collect(),
    };
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(Status::invalid_argument(format!(
            "qlink serve: the path {path:?} names no table (table, schema.table or catalog.schema.table)"
        )));
    }
    let quoted: Vec<String> = parts.iter().map(|p| format!("\"{}\"", p.replace('"', "\"\""))).collect();
    Ok(format!("SELECT * FROM {}", quoted.join(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_path_is_a_table_or_a_query() {
        let p = |v: &[&str]| path_sql(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(p(&["Weather"]).unwrap(), "SELECT * FROM \"Weather\"");
        assert_eq!(p(&["era5.surface"]).unwrap(), "SELECT * FROM \"era5\".\"surface\"");
        assert_eq!(p(&["era5", "a\"b"]).unwrap(), "SELECT * FROM \"era5\".\"a\"\"b\"");
        assert_eq!(p(&["  select 1"]).unwrap(), "  select 1");
        assert_eq!(p(&["WITH x AS (SELECT 1) SELECT * FROM x"]).unwrap(), "WITH x AS (SELECT 1) SELECT * FROM x");
        assert_eq!(p(&["withdrawals"]).unwrap(), "SELECT * FROM \"withdrawals\"");
        assert!(p(&["a..b"]).is_err() && p(&["a", "b", "c", "d"]).is_err());
    }
    use datafusion::arrow::array::{Int64Array, StringArray};

    #[test]
    fn handles_round_trip() {
        let (sql, p) = decode_handle(&encode_handle("SELECT $1", None).unwrap()).unwrap();
        assert_eq!((sql.as_str(), p.is_none()), ("SELECT $1", true));
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int64Array::from(vec![7])) as _),
            ("b", Arc::new(StringArray::from(vec!["x"])) as _),
        ])
        .unwrap();
        let (sql, p) = decode_handle(&encode_handle("SELECT $1, $2", Some(&batch)).unwrap()).unwrap();
        assert_eq!(sql, "SELECT $1, $2");
        assert_eq!(p.unwrap(), batch);
        for bad in [&b""[..], b"SELECT 1", b"qlink-prepared-1:\xff\xff\xff\xff"] {
            assert_eq!(decode_handle(bad).unwrap_err().code(), tonic::Code::NotFound);
        }
    }

    #[test]
    fn refuses_a_public_address_without_a_secret() {
        let public: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(check_bind(&IpAddr::from([127, 0, 0, 1]), &None).is_ok());
        assert!(check_bind(&"::1".parse().unwrap(), &None).is_ok());
        assert!(check_bind(&public, &None).unwrap_err().starts_with("serve --host 0.0.0.0 is not a loopback address"));
        let s = Secret::new("0123456789abcdef0123456789abcdef", "test").unwrap();
        assert!(check_bind(&public, &Some(s)).is_ok());
    }
}
