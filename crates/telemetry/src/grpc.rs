//! What OTLP over gRPC needs besides the exporter: a tokio runtime. tonic's channel spawns its
//! connection and buffer tasks when it is built and its timers need a runtime when polled, but
//! the SDK exports from its own plain threads (the batch processor's, the periodic reader's,
//! the shutdown's), and the CLI's foreground commands may have no runtime at all. So the gRPC
//! exporters get a runtime of their own: one thread driving a current-thread runtime, which
//! ends when the last exporter holding it is dropped (never inside an async context, where
//! dropping a runtime would panic).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;
use tokio::runtime::Handle;

/// The runtime's handle; the runtime's thread stops when this is dropped.
#[derive(Debug)]
pub(crate) struct GrpcRuntime {
    handle: Handle,
    /// Dropped with this: its receiver then wakes the thread, which returns and drops the
    /// runtime there.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl GrpcRuntime {
    /// Starts the runtime's thread.
    pub(crate) fn start() -> std::io::Result<Arc<GrpcRuntime>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("telemetry-grpc".to_owned())
            .spawn(move || {
                // Err when the sender is dropped: the only way it ends.
                let _ended = runtime.block_on(stopped);
            })?;
        Ok(Arc::new(GrpcRuntime {
            handle,
            _stop: stop,
        }))
    }

    /// Runs `build` inside the runtime's context (tonic spawns the channel's tasks there).
    pub(crate) fn build<T>(&self, build: impl FnOnce() -> T) -> T {
        let _entered = self.handle.enter();
        build()
    }
}

/// An exporter whose every call runs inside the gRPC runtime's context when there is one
/// (over HTTP there is none and the calls pass straight through).
#[derive(Debug)]
pub(crate) struct OnRuntime<E> {
    pub(crate) inner: E,
    pub(crate) runtime: Option<Arc<GrpcRuntime>>,
}

impl<E> OnRuntime<E> {
    fn entered<'a, T>(
        &'a self,
        future: impl Future<Output = T> + Send + 'a,
    ) -> impl Future<Output = T> + Send + 'a {
        let mut future = Box::pin(future);
        let handle = self.runtime.as_ref().map(|runtime| &runtime.handle);
        // The context is entered for each poll only: the guard never crosses an await.
        std::future::poll_fn(move |cx| {
            let _entered = handle.map(Handle::enter);
            future.as_mut().poll(cx)
        })
    }

    fn sync<T>(&self, call: impl FnOnce(&E) -> T) -> T {
        let _entered = self.runtime.as_ref().map(|runtime| runtime.handle.enter());
        call(&self.inner)
    }
}

impl<E: SpanExporter> SpanExporter for OnRuntime<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.entered(self.inner.export(batch)).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.sync(|inner| inner.shutdown_with_timeout(timeout))
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.sync(SpanExporter::force_flush)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for OnRuntime<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        self.entered(self.inner.export(metrics)).await
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.sync(PushMetricExporter::force_flush)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.sync(|inner| inner.shutdown_with_timeout(timeout))
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
