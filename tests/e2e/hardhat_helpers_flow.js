// Used by tests/e2e/test_hardhat_e2e.py: a Hardhat 2 test fixture written
// with @nomicfoundation/hardhat-network-helpers, run against a nodex node
// whose rpc.client_version lets the helpers in. Prints what it saw, as JSON.
// Environment: TOKEN_JSON, the compiled test token.
const hre = require("hardhat");
const helpers = require("@nomicfoundation/hardhat-network-helpers");

async function deployToken() {
  const artifact = require(process.env.TOKEN_JSON);
  const [owner, other] = await hre.ethers.getSigners();
  const factory = new hre.ethers.ContractFactory(artifact.abi, artifact.bytecode, owner);
  const token = await factory.deploy("Token", "TOK", 10n ** 24n);
  await token.waitForDeployment();
  return { token, owner, other };
}

async function main() {
  const seen = {};
  // loadFixture: deploys once, then returns to the snapshot it took.
  const { token, other } = await helpers.loadFixture(deployToken);
  await (await token.transfer(other.address, 7n)).wait();
  const again = await helpers.loadFixture(deployToken);
  seen.sameToken = (await again.token.getAddress()) === (await token.getAddress());
  seen.balanceAfterFixture = (await token.balanceOf(other.address)).toString();

  // Time: increase, increaseTo, latest, latestBlock.
  const before = await helpers.time.latest();
  await helpers.time.increase(3600);
  seen.increased = (await helpers.time.latest()) - before;
  await helpers.time.increaseTo(before + 86400);
  seen.increasedTo = (await helpers.time.latest()) - before;
  const block = await helpers.time.latestBlock();
  await helpers.mine(1000, { interval: 15 });
  seen.mined = (await helpers.time.latestBlock()) - block;
  await helpers.mineUpTo(block + 1500);
  seen.minedUpTo = (await helpers.time.latestBlock()) - block;

  // Accounts: balance, code, nonce, storage, impersonation.
  const whale = "0x7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a";
  await helpers.setBalance(whale, 10n ** 18n);
  seen.balance = (await hre.ethers.provider.getBalance(whale)).toString();
  await helpers.setNonce(whale, 5);
  seen.nonce = await hre.ethers.provider.getTransactionCount(whale);
  await helpers.setCode("0x1111111111111111111111111111111111111111", "0x60016000526001601ff3");
  seen.code = await hre.ethers.provider.getCode("0x1111111111111111111111111111111111111111");
  await helpers.setStorageAt("0x1111111111111111111111111111111111111111", 0, 42);
  seen.storage = await helpers.getStorageAt("0x1111111111111111111111111111111111111111", 0);
  await token.transfer(whale, 500n);
  await helpers.impersonateAccount(whale);
  const whaleSigner = await hre.ethers.getSigner(whale);
  const moved = await (await token.connect(whaleSigner).transfer(other.address, 100n)).wait();
  seen.whaleFrom = moved.from.toLowerCase();
  await helpers.stopImpersonatingAccount(whale);

  // A snapshot taken and restored by hand.
  const snapshot = await helpers.takeSnapshot();
  await helpers.mine(10);
  const high = await helpers.time.latestBlock();
  await snapshot.restore();
  seen.restored = high - (await helpers.time.latestBlock());

  await helpers.setBlockGasLimit(20000000);
  await helpers.mine();
  seen.gasLimit = Number((await hre.ethers.provider.getBlock("latest")).gasLimit);
  console.log(JSON.stringify(seen));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
