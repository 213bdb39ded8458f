# Builds a kubeno operator into one self-contained binary and runs it as a non-root user on a
# minimal base. The root filesystem can be mounted read-only; the generated Deployment mounts
# an emptyDir at /tmp for the webhook server's socket.
#
#   docker build -t myapp-operator .                       # the example operator
#   docker build --build-arg ENTRY=path/to/op.ts -t op .  # your own
ARG DENO_VERSION=2.9.6

FROM denoland/deno:${DENO_VERSION} AS build
ARG ENTRY=examples/myapp.ts
WORKDIR /src
COPY deno.json deno.lock ./
COPY . .
# Exactly an operator's permissions (kubeno compile --in-cluster prints the same list). No
# --v8-flags: compiled-in flags win over DENO_V8_FLAGS, through which the generated Deployment
# sizes the heap to its memory limit (README, "Memory").
RUN deno install --entrypoint "${ENTRY}" \
 && deno compile \
      --allow-net --allow-read=/var/run/secrets/kubernetes.io,/tmp,/proc/self/cgroup,/sys/fs/cgroup --allow-write=/tmp \
      --allow-env --allow-sys=hostname \
      --output /out/operator "${ENTRY}"

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/operator /operator
# glibc returns freed native buffers of 1 MiB and more to the system (src/util/memory_limit.ts).
ENV MALLOC_MMAP_THRESHOLD_=1048576
USER 65532:65532
EXPOSE 8443 8081 9443
ENTRYPOINT ["/operator"]
CMD ["run"]
