# kcm-rs image: build with the Rust toolchain image, run from a minimal non-root base.
#   docker build -t kcm-rs:dev .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kcm-rs && cp target/release/kcm-rs /kcm-rs

# distroless/cc: glibc and libgcc only, no shell; runs as uid 65532 (nonroot).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kcm-rs /usr/local/bin/kcm-rs
USER 65532:65532
EXPOSE 10257
ENTRYPOINT ["/usr/local/bin/kcm-rs"]
