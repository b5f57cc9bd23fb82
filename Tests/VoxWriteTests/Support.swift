import Foundation
import VoxTestSupport
import VoxCore
import VoxDecode


