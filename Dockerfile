# Builds a kubeno operator into one self-contained binary and runs it as a non-root user on a
# minimal base. The root filesystem can be mounted read-only: the binary writes nothing.
#
#   docker build -t myapp-operator .                       # the example operator
#   docker build --build-arg ENTRY=path/to/op.ts -t op .  # your own
ARG DENO_VERSION=2.9.6

FROM denoland/deno:${DENO_VERSION} AS build
ARG ENTRY=examples/myapp.ts
WORKDIR /src
COPY deno.json deno.lock ./
COPY . .
RUN deno install --entrypoint "${ENTRY}" \
 && deno compile --no-check \
      --allow-net --allow-env --allow-read --allow-sys=hostname,osRelease \
      --output /out/operator "${ENTRY}"

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/operator /operator
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["/operator"]
CMD ["run"]
