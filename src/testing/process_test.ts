import assert from "node:assert/strict";
import { freePort } from "./process.ts";

Deno.test("freePort: below the kernel's ephemeral range, bindable, never the same port twice", () => {
  const text = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range");
  const ephemeralStart = Number(text.trim().split(/\s+/)[0]);
  const ports = Array.from({ length: 50 }, () => freePort());
  for (const port of ports) {
    assert.ok(port >= 10000 && port < ephemeralStart, `${port} is inside [${ephemeralStart}, …)`);
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  }
  assert.equal(new Set(ports).size, ports.length, "a port was handed out twice");
});

Deno.test("freePort: skips a port that is taken", () => {
  const held = Array.from(
    { length: 20 },
    () => Deno.listen({ hostname: "127.0.0.1", port: freePort() }),
  );
  try {
    const taken = new Set(held.map((l) => l.addr.port));
    for (let i = 0; i < 50; i++) assert.ok(!taken.has(freePort()));
  } finally {
    for (const l of held) l.close();
  }
});
