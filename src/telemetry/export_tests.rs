use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use super::*;
use crate::telemetry::{SpanKind, Tracer};

/// One request a fake collector received: its head and body.
struct Received {
    head: String,
    body: Vec<u8>,
}

/// A collector on a loopback port: every request is passed to `requests`, then answered
/// 200 once `gate` lets it (the first request waits for the gate; later ones do not).
fn collector(gate: Option<mpsc::Receiver<()>>) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let (sender, requests) = mpsc::channel();
    std::thread::spawn(move || {
        let mut gate = gate;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut stream = stream;
            loop {
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                if head.is_empty() {
                    break;
                }
                let mut body = vec![0u8; length];
                std::io::Read::read_exact(&mut reader, &mut body).unwrap();
                if sender.send(Received { head, body }).is_err() {
                    return;
                }
                if let Some(gate) = gate.take() {
                    let _ = gate.recv();
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        }
    });
    (url, requests)
}

const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_full_queue_drops_and_counts_and_never_blocks() {
    let (open, gate) = mpsc::channel();
    let (url, requests) = collector(Some(gate));
    let exporter = OtlpExporter::start(
        OtlpConfig::new(url, "queue-test")
            .max_queue(2)
            .max_batch(1)
            .schedule_delay(Duration::from_secs(60)),
    )
    .unwrap();
    let tracer = Tracer::new(exporter.clone());
    tracer.start("first", SpanKind::Client, None).end();
    // The thread is now inside the first export, held by the collector.
    let first = requests.recv_timeout(LONG).unwrap();
    assert!(
        first.head.contains("application/x-protobuf"),
        "{}",
        first.head
    );
    let started = Instant::now();
    for _ in 0..5 {
        tracer.start("more", SpanKind::Client, None).end();
    }
    // Two fit in the queue; three are dropped, and ending a span never waited on the export.
    assert_eq!(exporter.dropped(), 3);
    assert!(started.elapsed() < Duration::from_secs(5));
    open.send(()).unwrap();
    assert!(tracer.flush(LONG));
    assert_eq!(exporter.exported(), 3);
    assert_eq!(exporter.failed(), 0);
}

#[test]
fn spans_go_out_within_the_schedule_delay_without_a_flush() {
    let (url, requests) = collector(None);
    let exporter = OtlpExporter::start(
        OtlpConfig::new(url, "delay-test")
            .protocol(Protocol::HttpJson)
            .header("x-api-key", "secret-value")
            .schedule_delay(Duration::from_millis(50)),
    )
    .unwrap();
    let tracer = Tracer::new(exporter.clone());
    let mut span = tracer.start("tools/call add", SpanKind::Client, None);
    span.set("mcp.method.name", "tools/call");
    span.end();
    let received = requests.recv_timeout(LONG).unwrap();
    assert!(received.head.starts_with("POST /v1/traces "));
    assert!(received.head.contains("application/json"));
    assert!(received
        .head
        .to_ascii_lowercase()
        .contains("x-api-key: secret-value"));
    let body: serde_json::Value = serde_json::from_slice(&received.body).unwrap();
    assert_eq!(
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"],
        "tools/call add"
    );
    // The header's value is not in the exporter's Debug.
    let config = OtlpConfig::new("http://h/v1/traces", "s").header("x-api-key", "secret-value");
    assert!(!format!("{config:?}").contains("secret-value"));
}

#[test]
fn an_unreachable_collector_counts_failures_and_flush_is_bounded() {
    // A port with nothing listening: connection refused, retried within the timeout.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    drop(listener);
    let exporter = OtlpExporter::start(
        OtlpConfig::new(url, "down")
            .timeout(Duration::from_millis(300))
            .schedule_delay(Duration::from_secs(60)),
    )
    .unwrap();
    let tracer = Tracer::new(exporter.clone());
    tracer.start("lost", SpanKind::Client, None).end();
    assert!(tracer.flush(LONG));
    assert_eq!(exporter.failed(), 1);
    assert_eq!(exporter.exported(), 0);
}

#[test]
fn the_environment_configures_the_exporter() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        config_from(move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    };
    assert!(env(&[]).is_none());
    let base = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/x"),
        ("OTEL_SERVICE_NAME", "front"),
        ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, other=2"),
    ])
    .unwrap();
    assert_eq!(base.endpoint, "http://c:4318/x/v1/traces");
    assert_eq!(base.service_name, "front");
    assert_eq!(base.protocol, Protocol::HttpProtobuf);
    assert_eq!(base.schedule_delay, Duration::from_millis(250));
    assert_eq!(
        base.headers,
        vec![
            ("api-key".to_owned(), "s=cret".to_owned()),
            ("other".to_owned(), "2".to_owned())
        ]
    );
    let slash = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/x/")]).unwrap();
    assert_eq!(slash.endpoint, "http://c:4318/x/v1/traces");
    let signal = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9999/custom"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from%20attrs,x=y"),
    ])
    .unwrap();
    assert_eq!(signal.endpoint, "http://t:9999/custom");
    assert_eq!(signal.protocol, Protocol::HttpJson);
    assert_eq!(signal.service_name, "from attrs");
    let bare = env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9999")]).unwrap();
    assert_eq!(bare.endpoint, "http://t:9999/");
    let only = env(&[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap();
    assert_eq!(only.endpoint, "http://localhost:4318/v1/traces");
    assert!(only.service_name.starts_with("unknown_service:"));
    for off in [
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ][..],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    ] {
        assert!(env(off).is_none(), "{off:?}");
    }
    // A malformed header list is ignored whole.
    let bad = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "novalue,k=%zz"),
    ])
    .unwrap();
    assert!(bad.headers.is_empty());
}
