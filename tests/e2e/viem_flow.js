// Used by tests/e2e/test_tool_suites_e2e.py: viem against a nodex node, as
// a dapp and its tests use it. Each check runs on its own and is reported
// by name: "ok", or the error's first line. The last line printed is
// {"checks": {...}}.
// Environment: NODEX_URL, NODEX_WS_URL, CONTRACTS (tests/data/contracts).
const path = require("path");
const viem = require("viem");

const chain = viem.defineChain({
  id: 33,
  name: "nodex regtest",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [process.env.NODEX_URL], webSocket: [process.env.NODEX_WS_URL] } },
});
const artifact = (name) => require(path.join(process.env.CONTRACTS, name + ".json"));
const COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826";
const COW1 = "0x7986b3df570230288501eea3d890bd66948c9b79";

const transport = viem.http(process.env.NODEX_URL);
const publicClient = viem.createPublicClient({ chain, transport, pollingInterval: 100, cacheTime: 0 });
const wallet = viem.createWalletClient({ chain, transport, account: COW });
const testClient = viem.createTestClient({ chain, transport, mode: "anvil" });

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function deployed(name, args = [], gas) {
  const { abi, bytecode } = artifact(name);
  const request = { abi, bytecode, args };
  if (gas !== undefined) request.gas = gas;
  const hash = await wallet.deployContract(request);
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  assert(receipt.status === "success", `${name} deployment ${receipt.status}`);
  return { address: receipt.contractAddress, abi };
}

// Collects the first `count` logs a watcher delivers, or fails after 20 s.
function watched(client, address, abi, count, act) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const timer = setTimeout(() => { unwatch(); reject(new Error(`saw ${seen.length} of ${count} events`)); }, 20000);
    const unwatch = client.watchContractEvent({
      address, abi, eventName: "OneIndexed",
      onLogs: (logs) => {
        seen.push(...logs);
        if (seen.length >= count) { clearTimeout(timer); unwatch(); resolve(seen); }
      },
      onError: (error) => { clearTimeout(timer); unwatch(); reject(error); },
    });
    setTimeout(() => act().catch((error) => { clearTimeout(timer); unwatch(); reject(error); }), 300);
  });
}

const checks = {};
async function check(name, body) {
  try {
    await body();
    checks[name] = "ok";
  } catch (error) {
    checks[name] = String(error.shortMessage || error.message || error).split("\n")[0];
  }
}

async function main() {
  let token, reverter, events;
  await check("public: chain id, block number, balance", async () => {
    assert((await publicClient.getChainId()) === 33, "chain id");
    assert(typeof (await publicClient.getBlockNumber()) === "bigint", "block number");
    assert((await publicClient.getBalance({ address: COW })) > 0n, "balance");
    const block = await publicClient.getBlock();
    assert(block.hash && block.number >= 0n, "block");
  });
  // Deployed with explicit gas: these are the fixtures of the checks below.
  await check("wallet: deploy with gas given", async () => {
    token = await deployed("Token", ["Token", "TOK", 10n ** 24n], 3_000_000n);
    reverter = await deployed("Reverter", [], 3_000_000n);
    events = await deployed("Events", [], 3_000_000n);
  });
  await check("wallet: deployContract from a node-held account without gas", async () => {
    const { address } = await deployed("Token", ["Other", "OTH", 1000n]);
    const supply = await publicClient.readContract({ address, abi: token.abi, functionName: "totalSupply" });
    assert(supply === 1000n, `supply ${supply}`);
  });
  await check("wallet: writeContract and readContract", async () => {
    const hash = await wallet.writeContract({ ...token, functionName: "transfer", args: [COW1, 5n] });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    assert(receipt.status === "success", "transfer status");
    const balance = await publicClient.readContract({ ...token, functionName: "balanceOf", args: [COW1] });
    assert(balance === 5n, `balance ${balance}`);
    const logs = await publicClient.getContractEvents({ ...token, eventName: "Transfer", fromBlock: receipt.blockNumber });
    assert(logs.length === 1 && logs[0].args.value === 5n, "Transfer event");
  });
  await check("wallet: sendTransaction and signMessage", async () => {
    const hash = await wallet.sendTransaction({ to: COW1, value: 7n });
    assert((await publicClient.waitForTransactionReceipt({ hash })).status === "success", "status");
    const signature = await wallet.signMessage({ message: "hello nodex" });
    assert(await viem.verifyMessage({ address: COW, message: "hello nodex", signature }), "signature");
  });
  await check("simulateContract decodes a revert reason", async () => {
    try {
      await publicClient.simulateContract({ ...reverter, account: COW, functionName: "revertWithReason" });
    } catch (error) {
      const reason = error.walk((e) => e instanceof viem.ContractFunctionRevertedError);
      assert(reason && reason.reason === "Reverter: always fails", `not decoded: ${error.shortMessage}`);
      return;
    }
    throw new Error("no revert");
  });
  await check("simulateContract decodes a custom error", async () => {
    try {
      await publicClient.simulateContract({ ...reverter, account: COW, functionName: "revertWithCustomError" });
    } catch (error) {
      const reverted = error.walk((e) => e instanceof viem.ContractFunctionRevertedError);
      assert(reverted && reverted.data && reverted.data.errorName === "Unauthorized", `not decoded: ${error.shortMessage}`);
      return;
    }
    throw new Error("no revert");
  });
  await check("estimateContractGas", async () => {
    const gas = await publicClient.estimateContractGas({ ...token, account: COW, functionName: "transfer", args: [COW1, 1n] });
    assert(gas > 21000n && gas < 100000n, `gas ${gas}`);
  });
  await check("test client: mine blocks (interval 0)", async () => {
    const before = await publicClient.getBlockNumber();
    await testClient.mine({ blocks: 5 });
    const after = await publicClient.getBlockNumber();
    assert(after - before === 5n, `mined ${after - before}`);
  });
  await check("test client: time, snapshot and revert", async () => {
    const start = (await publicClient.getBlock()).timestamp;
    const id = await testClient.snapshot();
    const now = BigInt(Math.floor(Date.now() / 1000));
    await testClient.increaseTime({ seconds: 3600 });
    await testClient.mine({ blocks: 1 });
    const later = (await publicClient.getBlock()).timestamp;
    assert(later >= now + 3600n, `the next block is ${later - now} s after the clock`);
    await testClient.revert({ id });
    assert((await publicClient.getBlock()).timestamp === start, "reverted");
  });
  await check("test client: setBalance, impersonation", async () => {
    const whale = "0x7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a";
    await testClient.setBalance({ address: whale, value: 10n ** 18n });
    assert((await publicClient.getBalance({ address: whale })) === 10n ** 18n, "balance");
    await testClient.impersonateAccount({ address: whale });
    const hash = await wallet.sendTransaction({ account: whale, to: COW1, value: 1n, gas: 21000n });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    assert(receipt.from.toLowerCase() === whale, "impersonated sender");
    await testClient.stopImpersonatingAccount({ address: whale });
  });
  await check("watchContractEvent over HTTP", async () => {
    const logs = await watched(publicClient, events.address, events.abi, 2, async () => {
      for (const amount of [1n, 2n]) {
        await wallet.writeContract({ ...events, functionName: "emitOneIndexed", args: [amount], gas: 100000n });
      }
    });
    assert(logs.map((log) => log.args.amount).join() === "1,2", "amounts");
  });
  await check("watchContractEvent over WebSocket", async () => {
    const wsClient = viem.createPublicClient({ chain, transport: viem.webSocket(process.env.NODEX_WS_URL) });
    try {
      const logs = await watched(wsClient, events.address, events.abi, 2, async () => {
        for (const amount of [3n, 4n]) {
          await wallet.writeContract({ ...events, functionName: "emitOneIndexed", args: [amount], gas: 100000n });
        }
      });
      assert(logs.map((log) => log.args.amount).join() === "3,4", "amounts");
    } finally {
      const socket = await wsClient.transport.getRpcClient();
      socket.close();
    }
  });
  console.log(JSON.stringify({ checks }));
}

main().then(() => process.exit(0), (error) => {
  console.error(error);
  process.exit(1);
});
